package helm_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/deploy/internal/kustomized"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/release"
	"github.com/kubecel/kubecel/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m, controlplane.Options{
		// RBAC aggregation fills the controller's ClusterRole, as in a cluster: the
		// full control plane runs the real controllers.
		Full:    true,
		CRDDirs: []string{"testdata/crds"},
	})
}

const chart = "kubecel"

// profiles are the documented values files of the chart, by name; "" is the defaults
// (two replicas with leader election).
var profiles = []string{"", "ha", "sharded", "selector", "monitoring"}

func profileArgs(profile string) []string {
	if profile == "" {
		return nil
	}
	return []string{"-f", filepath.Join(chart, "profiles", profile+".yaml")}
}

// render is helm template of the chart for a release in a namespace, with more helm
// arguments (-f FILE, --set K=V); a failure ends the test.
func render(t *testing.T, releaseName, namespace string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := helmTemplate(t, releaseName, namespace, args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := release.Objects(out)
	if err != nil {
		t.Fatalf("helm template's output: %v\n%s", err, out)
	}
	return objs
}

func helmTemplate(t *testing.T, releaseName, namespace string, args ...string) ([]byte, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(testenv.Tool(t, "helm"), append([]string{"template", releaseName, chart, "--namespace", namespace}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, &helmError{args: cmd.Args, err: err, stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

type helmError struct {
	args   []string
	err    error
	stderr string
}

func (e *helmError) Error() string {
	return strings.Join(e.args[1:], " ") + ": " + e.err.Error() + "\n" + e.stderr
}

func ref(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + " " + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}

func byRef(objs []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range objs {
		out[ref(o)] = o.Object
	}
	return out
}

// TestKustomizationsAreTheChart: deploy/'s kustomizations are the chart rendered for the
// release kubecel in kubecel-system, object by object, but for Helm's own labels (and the
// Namespace, which helm install --create-namespace makes): the defaults are deploy/, the
// sharded profile deploy/sharded, the monitoring profile deploy/ with deploy/monitoring.
func TestKustomizationsAreTheChart(t *testing.T) {
	tests := []struct {
		profile string
		dirs    []string
	}{
		{"", []string{".."}},
		{"sharded", []string{"../sharded"}},
		{"monitoring", []string{"..", "../monitoring"}},
	}
	for _, tt := range tests {
		t.Run("profile "+tt.profile, func(t *testing.T) {
			var want []*unstructured.Unstructured
			for _, dir := range tt.dirs {
				for _, o := range kustomized.Render(t, dir) {
					if o.GetKind() != "Namespace" {
						want = append(want, o)
					}
				}
			}
			got := render(t, release.InstallRelease, release.InstallNamespace, profileArgs(tt.profile)...)
			for _, o := range got {
				release.WithoutHelmLabels(o)
			}
			if diff := cmp.Diff(byRef(want), byRef(got)); diff != "" {
				t.Errorf("kustomize (-) and the chart (+) differ:\n%s", diff)
			}
		})
	}
}

// TestChartImage: the chart's default image is the one the release's archives carry,
// at the chart's appVersion.
func TestChartImage(t *testing.T) {
	var meta struct{ AppVersion string }
	readYAML(t, filepath.Join(chart, "Chart.yaml"), &meta)
	for _, o := range render(t, "kubecel", "kubecel-system") {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		image := containers[0].(map[string]any)["image"]
		if want := release.ImageRef(meta.AppVersion); image != want {
			t.Errorf("image %v, want %s", image, want)
		}
	}
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, o := range render(t, "kubecel", "kubecel-system", "--set", "image.repository=registry.example.com/kubecel", "--set", "image.digest="+digest) {
		if o.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if image := containers[0].(map[string]any)["image"]; image != "registry.example.com/kubecel@"+digest {
				t.Errorf("image %v with a digest, want registry.example.com/kubecel@%s", image, digest)
			}
		}
	}
}

func readYAML(t *testing.T, path string, out any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestLint: helm lint --strict passes with the defaults and with every profile.
func TestLint(t *testing.T) {
	for _, p := range profiles {
		t.Run("profile "+p, func(t *testing.T) {
			if err := release.Lint(t.Context(), testenv.Tool(t, "helm"), chart, profileArgs(p)...); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestSchemaDescribesEveryValue: every value of values.yaml, at every depth the schema
// has properties for, is described in values.schema.json, which lists no value that
// values.yaml lacks.
func TestSchemaDescribesEveryValue(t *testing.T) {
	var values map[string]any
	readYAML(t, filepath.Join(chart, "values.yaml"), &values)
	data, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	var problems []string
	var walk func(path string, values map[string]any, schema map[string]any)
	walk = func(path string, values map[string]any, schema map[string]any) {
		props, _ := schema["properties"].(map[string]any)
		for k, v := range values {
			p, ok := props[k].(map[string]any)
			if !ok {
				problems = append(problems, path+k+": not in the schema")
				continue
			}
			if d, _ := p["description"].(string); len(d) < 10 {
				problems = append(problems, path+k+": no description")
			}
			if sub, ok := v.(map[string]any); ok && p["properties"] != nil {
				walk(path+k+".", sub, p)
			}
		}
		for k := range props {
			if _, ok := values[k]; !ok {
				problems = append(problems, path+k+": in the schema, not in values.yaml")
			}
		}
	}
	walk("", values, schema)
	slices.Sort(problems)
	if len(problems) > 0 {
		t.Errorf("values.schema.json and values.yaml:\n%s", strings.Join(problems, "\n"))
	}
}

// TestValuesRefused: the schema and the templates refuse values that would not work,
// naming the value.
func TestValuesRefused(t *testing.T) {
	tests := []struct {
		set, want string
	}{
		{"mode=active", "/mode"},
		{"replicas=0", "/replicas"},
		{"imag.tag=v1", "additional properties 'imag' not allowed"},
		{"image.digest=latest", "/image/digest"},
		{"installation=Team_B", "/installation"},
		{"goMemLimit=lots", "/goMemLimit"},
		{"rules.existingConfigMap=mine,rules.selector.team=a", "rules.selector and rules.existingConfigMap"},
		{"rbac.rules=kind: Secret", "rbac.rules: a Secret"},
		{"serviceAccount.create=false", "serviceAccount.name is required"},
	}
	for _, tt := range tests {
		t.Run(tt.set, func(t *testing.T) {
			_, err := helmTemplate(t, "kubecel", "kubecel-system", "--set", tt.set)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("helm template --set %s: %v, want an error naming %q", tt.set, err, tt.want)
			}
		})
	}
}

// TestVersionsAgree: the chart's version is its appVersion without the v, and the newest
// section of CHANGELOG.md is that version (make release VERSION=... stamps both into the
// archive; the tree's chart and the kustomizations name the version it becomes).
func TestVersionsAgree(t *testing.T) {
	var meta struct{ Version, AppVersion string }
	readYAML(t, filepath.Join(chart, "Chart.yaml"), &meta)
	if "v"+meta.Version != meta.AppVersion {
		t.Errorf("Chart.yaml: version %s, appVersion %s; want X.Y.Z and vX.Y.Z", meta.Version, meta.AppVersion)
	}
	changelog, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	newest := ""
	for _, l := range strings.Split(string(changelog), "\n") {
		// "Unreleased" gathers the changes on main since the newest version.
		if v, ok := strings.CutPrefix(l, "## "); ok && v != "Unreleased" {
			newest = v
			break
		}
	}
	if newest != meta.AppVersion {
		t.Errorf("CHANGELOG.md's newest version is %q, the chart's appVersion %s", newest, meta.AppVersion)
	}
}
