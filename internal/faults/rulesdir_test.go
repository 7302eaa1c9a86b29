package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// dirRule is a rules file whose one rule, name, gives each ConfigMap labelled
// role=parent in ns a ConfigMap child named <parent>-<suffix>. suffix is a template
// fragment, so a broken one breaks the file.
func dirRule(ns, name, suffix string) string {
	return fmt.Sprintf(`apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: %s
    parent:
      apiVersion: v1
      resource: configmaps
      namespaces: [%s]
      selector: {matchLabels: {role: parent}}
    children:
      - id: copy
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-%s"}
`, name, ns, suffix)
}

// TestRulesDirectoryKeepsLastGoodFile runs `kubecel run --rules DIR` on a directory of
// three files. One file breaks: the other two still reload, and the broken one keeps
// its last good version (its child stays) until it is fixed.
func TestRulesDirectoryKeepsLastGoodFile(t *testing.T) {
	ns := namespace(t, "rulesdir")
	dir, scratch := t.TempDir(), t.TempDir()
	// write replaces a file at once, as editors do, so that no read sees half of it.
	write := func(file, data string) {
		t.Helper()
		tmp := filepath.Join(scratch, file)
		if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", dirRule(ns, "dir-a", "a"))
	write("b.yaml", dirRule(ns, "dir-b", "b"))
	write("c.yaml", dirRule(ns, "dir-c", "c"))
	ctrl := startKubecel(t, dir, cp.Kubeconfig)
	cms := kube(t).CoreV1().ConfigMaps(ns)
	parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"role": "parent"}}}
	if _, err := cms.Create(t.Context(), parent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	children := func(want ...string) func() (bool, string) { return childrenOfP(t, cms, want) }
	eventually(t, settle, children("p-a", "p-b", "p-c"))

	// b breaks while a and c change: a and c reload (their old children are pruned),
	// b keeps its last good version.
	write("b.yaml", dirRule(ns, "dir-b", "${parent.metadata.name +}"))
	write("a.yaml", dirRule(ns, "dir-a", "a2"))
	write("c.yaml", dirRule(ns, "dir-c", "c2"))
	eventually(t, settle, children("p-a2", "p-b", "p-c2"))
	eventually(t, settle, func() (bool, string) {
		logs := ctrl.logs.String()
		return strings.Contains(logs, "Rules reload failed") && strings.Contains(logs, filepath.Join(dir, "b.yaml")+":15: rule"),
			"no log line for b.yaml's failure, with its place"
	})
	if n := strings.Count(ctrl.logs.String(), "Rules reload failed"); n != 1 {
		t.Errorf("the broken version was logged %d times, want once", n)
	}
	if _, err := cms.Get(t.Context(), "p-b", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Error("the broken file's child was pruned")
	}

	// Fixed, b reloads too.
	write("b.yaml", dirRule(ns, "dir-b", "b2"))
	eventually(t, settle, children("p-a2", "p-b2", "p-c2"))
}

// TestRulesFromEverySource runs `kubecel run` with a rules file, a named ConfigMap and a
// label selector at once: every source contributes its rules, a ConfigMap edit reloads,
// and a rule that cannot run is reported on the ConfigMap that holds it.
func TestRulesFromEverySource(t *testing.T) {
	ns := namespace(t, "rulesources")
	file := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(file, []byte(dirRule(ns, "src-file", "f")), 0o600); err != nil {
		t.Fatal(err)
	}
	cms := kube(t).CoreV1().ConfigMaps(ns)
	put := func(name string, labels map[string]string, data map[string]string) {
		t.Helper()
		cm, err := cms.Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}
			_, err = cms.Create(t.Context(), cm, metav1.CreateOptions{})
		} else if err == nil {
			cm.Data = data
			_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	team := map[string]string{"kubecel.dev/rules": "team"}
	put("named", nil, map[string]string{"rules.yaml": dirRule(ns, "src-named", "n")})
	unserved := strings.Replace(dirRule(ns, "src-unserved", "u"), "apiVersion: v1\n      resource: configmaps", "apiVersion: nowhere.kubecel.dev/v1\n      resource: gadgets", 1)
	put("team-1", team, map[string]string{"a.yaml": dirRule(ns, "src-team", "t"), "b.yaml": unserved})
	startKubecelWith(t, cp.Kubeconfig, "--rules", file, "--rules-configmap", ns+"/named", "--rules-configmap-selector", ns+"/kubecel.dev/rules=team")

	parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"role": "parent"}}}
	if _, err := cms.Create(t.Context(), parent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	children := func(want ...string) func() (bool, string) { return childrenOfP(t, cms, want) }
	eventually(t, settle, children("p-f", "p-n", "p-t"))
	eventually(t, settle, func() (bool, string) {
		list, err := kube(t).CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=team-1,reason=RuleKindNotServed"})
		if err != nil || len(list.Items) == 0 {
			return false, fmt.Sprintf("no RuleKindNotServed Event on team-1 (err %v)", err)
		}
		return strings.Contains(list.Items[0].Message, `rule "src-unserved" does not run`), "event message " + list.Items[0].Message
	})

	put("named", nil, map[string]string{"rules.yaml": dirRule(ns, "src-named", "n2")})
	eventually(t, settle, children("p-f", "p-n2", "p-t"))
}

// childrenOfP is a condition: the ConfigMaps of the parent "p" (named p-*) are exactly
// want, in name order.
func childrenOfP(t *testing.T, cms typedcorev1.ConfigMapInterface, want []string) func() (bool, string) {
	return func() (bool, string) {
		list, err := cms.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "p-") {
				got = append(got, cm.Name)
			}
		}
		return strings.Join(got, " ") == strings.Join(want, " "), fmt.Sprintf("children %v, want %v", got, want)
	}
}
