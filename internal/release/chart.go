package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ChartDir is the chart's directory, relative to the module root.
const ChartDir = "deploy/helm/kubecel"

// Install names the release and namespace that install.yaml is rendered for.
const (
	InstallRelease   = "kubecel"
	InstallNamespace = "kubecel-system"
)

var (
	chartVersionLine    = regexp.MustCompile(`(?m)^version: .*$`)
	chartAppVersionLine = regexp.MustCompile(`(?m)^appVersion: .*$`)
)

// packageChart is helm package of the chart with the release's version and appVersion
// (whose tag is the chart's default image tag), written here so that the archive is
// reproducible: every file of the chart's directory under kubecel/, sorted, dated at
// the commit. (helm package dates its entries at the time it runs.)
func packageChart(c Config) ([]byte, error) {
	root := filepath.Join(c.Root, ChartDir)
	var entries []entry
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("chart: %s is not a regular file", path)
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == "Chart.yaml" {
			if data, err = setChartVersion(data, c); err != nil {
				return err
			}
		}
		entries = append(entries, file("kubecel/"+filepath.ToSlash(rel), 0o644, data))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tarGz(entries, c.Time)
}

// setChartVersion sets Chart.yaml's version and appVersion to the release's.
func setChartVersion(chart []byte, c Config) ([]byte, error) {
	if len(chartVersionLine.FindAll(chart, -1)) != 1 || len(chartAppVersionLine.FindAll(chart, -1)) != 1 {
		return nil, errors.New("chart: Chart.yaml must have one top-level version: line and one appVersion: line")
	}
	chart = chartVersionLine.ReplaceAll(chart, []byte("version: "+c.ChartVersion()))
	return chartAppVersionLine.ReplaceAll(chart, []byte("appVersion: "+c.Version)), nil
}

// helmLabels are the labels Helm charts put on objects for Helm's own bookkeeping: the
// chart, the release, the app's version and Helm as the manager. install.yaml, which
// kubectl applies, leaves them out, and the kustomizations of deploy/ have none.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

// WithoutHelmLabels removes helmLabels from the object's labels.
func WithoutHelmLabels(obj *unstructured.Unstructured) {
	labels := obj.GetLabels()
	for _, l := range helmLabels {
		delete(labels, l)
	}
	if len(labels) == 0 {
		labels = nil
	}
	obj.SetLabels(labels)
}

// Objects decodes a stream of YAML documents (helm template's output, install.yaml),
// skipping empty ones.
func Objects(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := map[string]any{}
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// renderInstall is install.yaml: the Namespace, then the chart rendered with its default
// values by helm template for release kubecel in kubecel-system, without Helm's labels.
func renderInstall(ctx context.Context, c Config, chart []byte) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "kubecel-chart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, chartArchive(c))
	if err := os.WriteFile(path, chart, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, c.Helm, "template", InstallRelease, path, "--namespace", InstallNamespace)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template: %w\n%s", err, stderr.Bytes())
	}
	objs, err := Objects(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("helm template's output: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# kubecel %s: kubectl apply --server-side -f install.yaml (docs/install.md).\n", c.Version)
	fmt.Fprintf(&b, "# The Helm chart %s with its default values, for the release %s\n", chartArchive(c), InstallRelease)
	fmt.Fprintf(&b, "# in %s: the controller, image %s, two replicas with\n", InstallNamespace, ImageRef(c.Version))
	b.WriteString("# leader election, its RBAC, and the example rules (the ConfigMap kubecel-rules).\n")
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", InstallNamespace)
	for _, obj := range objs {
		WithoutHelmLabels(obj)
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return []byte(b.String()), nil
}
