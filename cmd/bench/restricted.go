package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// --restricted (with --crds): the controller runs as an installation from deploy/base
// runs, not as the control plane's admin: as the ServiceAccount kubecel-system/kubecel
// (impersonated: kubecel run --as), bound to deploy/base's roles and to the ClusterRole
// that `kubecel rbac` prints for the phase's rules. Its permission checks then take the
// path of least-privilege RBAC, which the admin's do not. The bench's control plane runs
// no ClusterRole aggregation, so each role that deploy/base's kubecel-controller would
// aggregate is bound to the ServiceAccount itself: the same permissions.

// restrictedManifests are deploy/base's manifests the controller's identity needs, read
// from the repository (make bench runs from its root).
var restrictedManifests = []string{"deploy/base/namespace.yaml", "deploy/base/serviceaccount.yaml", "deploy/base/rbac.yaml"}

// restrictedUser is the ServiceAccount's user name, restrictedGroups the groups the API
// server gives a ServiceAccount's token.
const restrictedUser = "system:serviceaccount:kubecel-system:kubecel"

var restrictedGroups = []string{"system:serviceaccounts", "system:serviceaccounts:kubecel-system", "system:authenticated"}

// restrictedArgs make kubecel run act as the ServiceAccount.
func restrictedArgs() []string {
	args := []string{"--as=" + restrictedUser}
	for _, g := range restrictedGroups {
		args = append(args, "--as-group="+g)
	}
	return args
}

// restrictedResources maps the kinds of those manifests to their resources.
var restrictedResources = map[string]schema.GroupVersionResource{
	"Namespace":          {Version: "v1", Resource: "namespaces"},
	"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"Role":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"RoleBinding":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// restrict creates deploy/base's identity and roles and the rules' ClusterRole (printed
// by the kubecel binary under test, loading as many rules per source as maxRules), and
// waits until the ServiceAccount may patch the status of check, a parent resource of
// the rules: until the authorizer has seen the bindings.
func (b *bench) restrict(ctx context.Context, rulesPath string, maxRules int, check schema.GroupVersionResource) error {
	var docs [][]byte
	for _, path := range restrictedManifests {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%w (run the bench from the repository's root)", err)
		}
		docs = append(docs, splitYAML(data)...)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, b.cfg.kubecel, "rbac", "--rules", rulesPath, "--kubeconfig", b.cp.Kubeconfig, "--max-rules-per-source="+strconv.Itoa(maxRules))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("kubecel rbac: %w\n%s", err, stderr.String())
	}
	docs = append(docs, splitYAML(out)...)
	created := 0
	for _, doc := range docs {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return err
		}
		if len(obj.Object) == 0 {
			continue
		}
		if _, ok := restrictedResources[obj.GetKind()]; !ok {
			return fmt.Errorf("restricted: no resource known for kind %s", obj.GetKind())
		}
		objs := []*unstructured.Unstructured{obj}
		if obj.GetKind() == "ClusterRole" && obj.GetLabels()["kubecel.dev/aggregate-to-controller"] == "true" {
			objs = append(objs, bindToServiceAccount(obj.GetName()))
		}
		for _, o := range objs {
			gvr := restrictedResources[o.GetKind()]
			_, err := b.clients[0].Resource(gvr).Namespace(o.GetNamespace()).Create(ctx, o, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("restricted: create %s %s: %w", o.GetKind(), o.GetName(), err)
			}
			created++
		}
	}
	start := time.Now()
	attrs := &authorizationv1.ResourceAttributes{Group: check.Group, Resource: check.Resource, Subresource: "status", Verb: "patch"}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: restrictedUser, Groups: restrictedGroups, ResourceAttributes: attrs}}
		got, err := b.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("restricted: the ServiceAccount may not patch %s/status a minute after its roles were bound: %w", check.Resource, err)
	}
	logf("restricted: %d objects created; the controller runs as the ServiceAccount kubecel-system/kubecel (its roles took effect in %s)", created, secs(time.Since(start)))
	return nil
}

// bindToServiceAccount is a ClusterRoleBinding of the ClusterRole role to the
// controller's ServiceAccount.
func bindToServiceAccount(role string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "bench-" + role},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "kubecel", "namespace": "kubecel-system"}},
	}}
}

// splitYAML splits a YAML stream into its documents.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
	return docs
}
