package examples_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules/contract"
)

// checkRender runs `kubecel render` on the live parent (UID included) with its live
// children as the observed objects, as a user would with `kubectl get -o yaml`, and
// checks that it prints exactly the children the controller applied: the same objects,
// each with every field render shows (labels, annotation, owner reference included)
// equal on the cluster, but the proof, which render cannot make offline. Fields only the server fills in (uid, resourceVersion,
// defaults, status) are the only difference allowed.
func (c *cluster) checkRender(dir string, gvr schema.GroupVersionResource, ns, name string) {
	c.t.Helper()
	bin := testenv.Kubecel(c.t)
	parent, err := c.get(gvr, ns, name)
	if err != nil {
		c.t.Fatal(err)
	}
	tmp := c.t.TempDir()
	parentFile := filepath.Join(tmp, "parent.yaml")
	writeYAML(c.t, parentFile, parent.Object)
	observedFile := filepath.Join(tmp, "observed.yaml")
	var live []map[string]any
	for _, objs := range c.children(parent) {
		live = append(live, objs...)
	}
	writeYAML(c.t, observedFile, live...)
	args := []string{"render", "--rules", filepath.Join(dir, "rules.yaml"), "-f", parentFile, "-f", observedFile, "-o", "json"}
	if _, err := os.Stat(filepath.Join(dir, "crd.yaml")); err == nil {
		args = append(args, "--crds", dir)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = testenv.ProcessEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	testenv.CheckRaces(c.t, "kubecel "+strings.Join(args, " "), stderr.String())
	if err != nil {
		c.t.Fatalf("kubecel %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &list); err != nil {
		c.t.Fatalf("render output: %v\n%s", err, stdout.String())
	}
	var rendered, applied []string
	for _, item := range list.Items {
		u := &unstructured.Unstructured{Object: item}
		if u.GetKind() == parent.GetKind() && u.GetName() == parent.GetName() {
			continue // the status document
		}
		key := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
		rendered = append(rendered, key)
		got, err := c.get(c.resource(u.GroupVersionKind()), u.GetNamespace(), u.GetName())
		if err != nil {
			c.t.Errorf("render prints %s, the cluster has none: %v", key, err)
			continue
		}
		// Only the installation's key makes the proof: render prints a placeholder, and
		// the live one must prove the child.
		if u.GetAnnotations()[contract.AnnotationProof] != contract.PlaceholderProof {
			c.t.Errorf("render prints %s with proof %q, want %s", key, u.GetAnnotations()[contract.AnnotationProof], contract.PlaceholderProof)
		}
		unstructured.RemoveNestedField(item, "metadata", "annotations", contract.AnnotationProof)
		if !testenv.Identity(c.t).ProvesObject(got) {
			c.t.Errorf("%s on the cluster carries no proof of the installation: %v", key, got.GetAnnotations())
		}
		if at, ok := contains(got.Object, item, ""); !ok {
			c.t.Errorf("render prints %s with %s", key, at)
		}
	}
	for _, obj := range live {
		u := &unstructured.Unstructured{Object: obj}
		applied = append(applied, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
	}
	sort.Strings(rendered)
	sort.Strings(applied)
	if diff := cmp.Diff(applied, rendered); diff != "" {
		c.t.Errorf("%s: children the controller applied vs what render prints (-applied +rendered):\n%s", name, diff)
	}
}

// writeYAML writes objects as a multi-document YAML file.
func writeYAML(t *testing.T, file string, objs ...map[string]any) {
	t.Helper()
	var b bytes.Buffer
	for _, obj := range objs {
		out, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(out)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
