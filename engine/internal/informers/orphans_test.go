package informers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// version is one version of an object as a watch delivers it.
type version struct {
	uid         string
	terminating bool
	finalizers  []string
}

func (v version) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace("ns")
	u.SetName("w-" + v.uid)
	u.SetUID(types.UID(v.uid))
	if v.terminating {
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
	}
	u.SetFinalizers(v.finalizers)
	return u
}

// TestDeletedWithOrphan feeds versions of objects through the informers' transform, in
// watch order, and checks which cached versions say they are deleted with the orphan
// policy.
func TestDeletedWithOrphan(t *testing.T) {
	const orphan, ours, foreground = metav1.FinalizerOrphanDependents, "kubecel.dev/rule-web", metav1.FinalizerDeleteDependents
	tests := []struct {
		name     string
		versions []version
		want     []bool
	}{{
		name: "the garbage collector removes the orphan finalizer before the rule's goes",
		versions: []version{
			{uid: "a", finalizers: []string{ours}},
			{uid: "a", terminating: true, finalizers: []string{ours, orphan}},
			{uid: "a", terminating: true, finalizers: []string{ours}},
			{uid: "a", terminating: true}, // the delete event
		},
		want: []bool{false, true, true, true},
	}, {
		name: "an ordinary deletion held by the rule's finalizer",
		versions: []version{
			{uid: "b", finalizers: []string{ours}},
			{uid: "b", terminating: true, finalizers: []string{ours}},
			{uid: "b", terminating: true},
		},
		want: []bool{false, false, false},
	}, {
		name: "a foreground deletion",
		versions: []version{
			{uid: "c", terminating: true, finalizers: []string{foreground}},
			{uid: "c", terminating: true},
		},
		want: []bool{false, false},
	}, {
		name: "another object of the same name after an orphan deletion",
		versions: []version{
			{uid: "d1", terminating: true, finalizers: []string{orphan}},
			{uid: "d2", finalizers: []string{ours}},
			{uid: "d2", terminating: true, finalizers: []string{ours}},
		},
		want: []bool{true, false, false},
	}, {
		name: "the sighting ends with the delete event",
		versions: []version{
			{uid: "e", terminating: true, finalizers: []string{ours, orphan}},
			{uid: "e", terminating: true},
			{uid: "e", terminating: true, finalizers: []string{ours}}, // (a later object cannot have e's UID; the sighting is gone)
		},
		want: []bool{true, true, false},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSet(nil, 0, nil)
			var got []bool
			for _, v := range tt.versions {
				obj, err := s.toCache(v.object())
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, obj.(*Object).DeletedWithOrphan())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DeletedWithOrphan per version (-want +got):\n%s", diff)
			}
			if n := len(s.orphans.seen); n != 0 && tt.versions[len(tt.versions)-1].finalizers == nil {
				t.Errorf("%d sightings left after the delete event", n)
			}
		})
	}
}
