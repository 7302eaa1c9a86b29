package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/apischema"
	"github.com/kubecel/kubecel/rules/contract"
)

// apiRules is a rule that defines its parent's API, with its scope, spec fields and
// child's data filled in by apiRulesWith. Every test has its own group, as CRDs are
// cluster-wide.
const apiRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: {{.Rule}}
    api:
      group: {{.Rule}}.api.kubecel.dev
      version: v1
      kind: Website
      scope: %s
      spec:
%s
      status:
        url: string
    parent:
      namespaces: [{{.NS}}]
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata:
            name: ${parent.metadata.name}
            namespace: {{.NS}}
          data:
%s
    status:
      fields:
        url: ${"http://" + parent.metadata.name}
`

func apiRulesWith(scope, spec, data string) string {
	indent := func(s, pad string) string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		for i, l := range lines {
			lines[i] = pad + strings.TrimSpace(l)
		}
		return strings.Join(lines, "\n")
	}
	return fmt.Sprintf(apiRules, scope, indent(spec, "        "), indent(data, "            "))
}

var (
	websiteSpec = `
image: string | required=true
replicas: integer | default=1 minimum=1`
	websiteData = `
image: ${parent.spec.image}
replicas: ${string(parent.spec.replicas)}`
)

// apiFixture is a fixture whose rule defines the Website API.
type apiFixture struct{ *fixture }

func (f apiFixture) websites() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: f.rule + ".api.kubecel.dev", Version: "v1", Resource: "websites"}
}

func (f apiFixture) crdName() string { return "websites." + f.rule + ".api.kubecel.dev" }

func (f apiFixture) website(name string, spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": f.rule + ".api.kubecel.dev/v1", "kind": "Website",
		"metadata": map[string]any{"name": name, "namespace": f.ns},
		"spec":     spec,
	}
}

// getCRD reads a CRD from the API server.
func getCRD(t *testing.T, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	t.Helper()
	u, err := testenv.Dynamic(t).Resource(crdGVR).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		t.Fatal(err)
	}
	return crd, nil
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// specFields lists the fields of the served schema's spec.
func specFields(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for name := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// specManagers lists the field managers of a CRD's spec and metadata (not its status,
// which the API server writes), as manager/operation.
func specManagers(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, m := range crd.ManagedFields {
		if m.Subresource == "" {
			out = append(out, m.Manager+"/"+string(m.Operation))
		}
	}
	return out
}

func (f apiFixture) waitConfig(name, key, want string) {
	f.t.Helper()
	f.waitFor(configMaps, f.ns, name, func(u *unstructured.Unstructured) (bool, string) {
		got := nestedString(u, "data", key)
		return got == want, fmt.Sprintf("data.%s = %q, want %q", key, got, want)
	})
}

// waitNotified waits until the controller said that the rule cannot run for reason,
// with a message that holds every one of parts.
func (f apiFixture) waitNotified(n *notifications, reason string, parts ...string) string {
	f.t.Helper()
	var found string
	f.eventually(func() (bool, string) {
		for _, s := range n.list() {
			if !strings.HasPrefix(s, f.rule+" "+reason+": ") {
				continue
			}
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(s, p) }) {
				found = s
				return true, ""
			}
		}
		return false, fmt.Sprintf("notifications %q, want one of rule %s, reason %s, with %q", n.list(), f.rule, reason, parts)
	})
	return found
}

// TestAPI: a rule with an api creates its CRD, with the installation's proof, under its
// own field manager, and starts once the CRD is Established; parents get the defaults
// the API server gives them; an additive edit applies; each breaking edit is refused,
// naming the change and the stored objects it breaks, while the last good version
// keeps converging parents; removing the rule leaves the CRD and the parents.
func TestAPI(t *testing.T) {
	var n notifications
	f := apiFixture{startControllerWith(t, apiRulesWith("Namespaced", websiteSpec, websiteData), rules.Options{}, engine.Options{Workers: 2, Notify: n.notify})}
	var crd *apiextensionsv1.CustomResourceDefinition
	f.eventually(func() (bool, string) {
		var err error
		if crd, err = getCRD(t, f.crdName()); err != nil {
			return false, err.Error()
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "CRD not Established"
	})
	if got := crd.Labels[contract.LabelInstallation]; got != testenv.Identity(t).Name() {
		t.Errorf("CRD installation label %q, want %q", got, testenv.Identity(t).Name())
	}
	if !testenv.Identity(t).ProvesAPI(crd.Name, "", crd.Labels, crd.Annotations) {
		t.Errorf("the CRD does not carry the installation's proof: %v", crd.Annotations)
	}
	if got, want := specManagers(crd), []string{contract.APIFieldManager + "/Apply"}; !slices.Equal(got, want) {
		t.Errorf("CRD field managers %v, want %v", got, want)
	}

	// The parent omits replicas: the API server's default (1) is what the child reads.
	f.create(f.websites(), f.website("shop", map[string]any{"image": "nginx"}))
	f.waitConfig("shop", "replicas", "1")
	f.waitFor(f.websites(), f.ns, "shop", func(u *unstructured.Unstructured) (bool, string) {
		got := nestedString(u, "status", "url")
		return got == "http://shop", fmt.Sprintf("status.url %q", got)
	})
	f.create(f.websites(), f.website("blog", map[string]any{"image": "httpd", "replicas": int64(3)}))
	f.waitConfig("blog", "replicas", "3")

	// A restart with the same rules sends no write to the CRD.
	rv := crd.ResourceVersion
	f.restart()
	f.create(f.websites(), f.website("wiki", map[string]any{"image": "caddy"}))
	f.waitConfig("wiki", "image", "caddy")
	if crd, _ = getCRD(t, f.crdName()); crd.ResourceVersion != rv {
		t.Errorf("a restart with the same api wrote the CRD (resourceVersion %s -> %s)", rv, crd.ResourceVersion)
	}

	// Additive: a new field with a default. Stored parents read it with its default.
	added := websiteSpec + "\ntier: string | default=web enum=web,api"
	f.ctrl.SetRules(t.Context(), f.loadRules(apiRulesWith("Namespaced", added, websiteData+"\ntier: ${parent.spec.tier}")))
	f.waitConfig("shop", "tier", "web")
	crd, _ = getCRD(t, f.crdName())
	if got, want := specFields(crd), []string{"image", "replicas", "tier"}; !slices.Equal(got, want) {
		t.Errorf("spec fields after the additive edit: %v, want %v", got, want)
	}
	good := apiRulesWith("Namespaced", added, websiteData+"\ntier: ${parent.spec.tier}")

	// Breaking edits: each is refused with its change and how many stored objects it
	// breaks; the last good version keeps converging parents, and the CRD is unchanged.
	breaking := []struct {
		name, scope, spec, data string
		want                    []string
	}{{
		name: "removed field", scope: "Namespaced",
		spec: "image: string | required=true\ntier: string | default=web enum=web,api",
		data: "image: ${parent.spec.image}",
		want: []string{"spec.replicas: removed", "breaks 3 stored objects)"},
	}, {
		name: "narrowed type", scope: "Namespaced",
		spec: "image: string | required=true\nreplicas: integer | default=1 minimum=1 maximum=2\ntier: string | default=web enum=web,api",
		data: websiteData,
		want: []string{"spec.replicas", "breaks 1 stored object)"},
	}, {
		name: "required without default", scope: "Namespaced",
		spec: added + "\nowner: string | required=true",
		data: websiteData,
		want: []string{"spec.owner", "breaks 3 stored objects)"},
	}, {
		name: "scope", scope: "Cluster",
		spec: added,
		data: websiteData,
		want: []string{"scope Namespaced -> Cluster", "breaks 3 stored objects)"},
	}}
	for i, tc := range breaking {
		f.ctrl.SetRules(t.Context(), f.loadRules(apiRulesWith(tc.scope, tc.spec, tc.data)))
		msg := f.waitNotified(&n, contract.PendingAPIRefused, tc.want...)
		if !strings.Contains(msg, f.crdName()) {
			t.Errorf("%s: the refusal does not name the CRD: %s", tc.name, msg)
		}
		image := fmt.Sprintf("nginx:%d", i)
		f.patchSpec(f.websites(), f.ns, "shop", fmt.Sprintf(`{"image":%q}`, image))
		f.waitConfig("shop", "image", image)
		after, _ := getCRD(t, f.crdName())
		if got, want := specFields(after), []string{"image", "replicas", "tier"}; !slices.Equal(got, want) || after.Spec.Scope != apiextensionsv1.NamespaceScoped {
			t.Errorf("%s: the refused edit changed the CRD: fields %v scope %s", tc.name, got, after.Spec.Scope)
		}
		// Back to the good rules before the next edit, so each is judged on its own.
		f.ctrl.SetRules(t.Context(), f.loadRules(good))
	}

	// Removing the rule leaves the CRD and the parents.
	f.ctrl.SetRules(t.Context(), f.loadRules(`
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules: []
`))
	f.waitIdle()
	if _, err := getCRD(t, f.crdName()); err != nil {
		t.Errorf("CRD after the rule was removed: %v", err)
	}
	if _, err := f.get(f.websites(), f.ns, "shop"); err != nil {
		t.Errorf("parent after the rule was removed: %v", err)
	}
}

// TestAPIForeignCRD: a CRD of the api's name that this installation did not make is
// never written, even when it carries kubecel's labels and a proof copied from
// elsewhere: the rule waits, saying why. Once its owner makes it what the rule
// generates (as a GitOps user applies what kubecel crd prints), the rule runs on it,
// and still never writes it.
func TestAPIForeignCRD(t *testing.T) {
	var n notifications
	f := apiFixture{&fixture{t: t, ns: testenv.Namespace(t), rule: fmt.Sprintf("r%04x", rand.IntN(1<<16)),
		rulesTemplate: apiRulesWith("Namespaced", websiteSpec, websiteData), opts: engine.Options{Workers: 2, Notify: n.notify}}}
	generated := f.loadRules(f.rulesTemplate).CRDs()[0]
	// Someone else's CRD of that name: another schema, kubecel's labels, a proof made
	// for another CRD name.
	theirs := generated.DeepCopy()
	theirs.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"image": {Type: "string"}, "size": {Type: "integer"}}}
	theirs.Labels = map[string]string{contract.LabelInstallation: testenv.Identity(t).Name(), contract.LabelManagedBy: contract.ManagedByValue}
	theirs.Annotations = map[string]string{contract.AnnotationProof: testenv.Identity(t).APIProof("other."+generated.Name, "")}
	obj, err := apischema.Manifest(theirs)
	if err != nil {
		t.Fatal(err)
	}
	created, err := testenv.Dynamic(t).Resource(crdGVR).Create(t.Context(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldManager: "someone"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = testenv.Dynamic(t).Resource(crdGVR).Delete(context.Background(), generated.Name, metav1.DeleteOptions{})
	})
	f.run()
	f.waitNotified(&n, contract.PendingAPIRefused, "was not made by this kubecel installation", "spec.replicas", "spec.size")
	f.waitIdle()
	now, _ := getCRD(t, generated.Name)
	if now.Generation != created.GetGeneration() || slices.Contains(specManagers(now), contract.APIFieldManager+"/Apply") {
		t.Errorf("kubecel wrote a CRD it did not make: generation %d -> %d, managers %v", created.GetGeneration(), now.Generation, specManagers(now))
	}

	// Its owner replaces its schema with the generated one: the rule starts by itself
	// and serves parents, and the CRD stays theirs.
	now.Spec = generated.Spec
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.Dynamic(t).Resource(crdGVR).Update(t.Context(), &unstructured.Unstructured{Object: u}, metav1.UpdateOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}
	f.eventually(func() (bool, string) {
		_, err := testenv.Dynamic(t).Resource(f.websites()).Namespace(f.ns).Create(t.Context(), &unstructured.Unstructured{Object: f.website("shop", map[string]any{"image": "nginx"})}, metav1.CreateOptions{})
		return err == nil, fmt.Sprintf("create a parent: %v", err)
	})
	f.waitConfig("shop", "replicas", "1")
	after, _ := getCRD(t, generated.Name)
	if slices.Contains(specManagers(after), contract.APIFieldManager+"/Apply") || after.Annotations[contract.AnnotationProof] != theirs.Annotations[contract.AnnotationProof] {
		t.Errorf("kubecel wrote a CRD it did not make: managers %v, annotations %v", specManagers(after), after.Annotations)
	}
}
