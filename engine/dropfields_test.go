package engine

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDropManagedFields: the transform of the revision and CRD-metadata caches keeps an
// object but its managedFields.
func TestDropManagedFields(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{{Manager: "kubecel", Operation: metav1.ManagedFieldsOperationApply}}
	objs := []metav1.Object{
		&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r", Labels: map[string]string{"a": "b"}, ManagedFields: entries}, Revision: 3},
		&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "crd", ResourceVersion: "7", ManagedFields: entries}},
	}
	for _, o := range objs {
		got, err := dropManagedFields(o)
		if err != nil {
			t.Fatalf("%s: %v", o.GetName(), err)
		}
		m := got.(metav1.Object)
		if m.GetManagedFields() != nil {
			t.Errorf("%s: managedFields kept: %v", o.GetName(), m.GetManagedFields())
		}
		if m.GetName() != o.GetName() || m.GetLabels()["a"] != o.GetLabels()["a"] || m.GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("%s: the rest of the object changed: %+v", o.GetName(), m)
		}
	}
	if cr := objs[0].(*appsv1.ControllerRevision); cr.Revision != 3 || cr.Labels["a"] != "b" {
		t.Errorf("the revision lost more than its managedFields: %+v", cr)
	}
}
