package reconcile

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// writer sends every request of the reconciler to the API server. It is the one place
// that knows of a dry run: each write then carries DryRun=All, so the server validates
// and answers it as it would the real one and stores nothing.
type writer struct {
	client dynamic.Interface
	dryRun bool
}

func (w writer) resource(gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	return w.client.Resource(gvr).Namespace(namespace)
}

// dry is the DryRun option of every write.
func (w writer) dry() []string {
	if w.dryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// apply server-side applies obj with the field manager, forcing conflicts.
func (w writer) apply(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	opts := metav1.ApplyOptions{FieldManager: manager, Force: true, DryRun: w.dry()}
	return w.resource(gvr, obj.GetNamespace()).Apply(ctx, obj.GetName(), obj, opts)
}

// applyStatus server-side applies obj's status with the field manager, forcing conflicts.
func (w writer) applyStatus(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured, manager string) (*unstructured.Unstructured, error) {
	opts := metav1.ApplyOptions{FieldManager: manager, Force: true, DryRun: w.dry()}
	return w.resource(gvr, obj.GetNamespace()).ApplyStatus(ctx, obj.GetName(), obj, opts)
}

// mergePatch sends a JSON merge patch (releasing a Keep child: keep.go).
func (w writer) mergePatch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, patch []byte, manager string) error {
	opts := metav1.PatchOptions{FieldManager: manager, DryRun: w.dry()}
	_, err := w.resource(gvr, namespace).Patch(ctx, name, types.MergePatchType, patch, opts)
	return err
}

// delete deletes an object in the background, on the preconditions.
func (w writer) delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, pre *metav1.Preconditions) error {
	policy := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: &policy, DryRun: w.dry()}
	return w.resource(gvr, namespace).Delete(ctx, name, opts)
}

// get reads an object from the API server (not a write: the same in a dry run).
func (w writer) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	return w.resource(gvr, namespace).Get(ctx, name, metav1.GetOptions{})
}
