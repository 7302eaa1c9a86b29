package informers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/rules/contract"
)

// nameIn is a name in namespace ns whose bucket is b.
func nameIn(t *testing.T, ns string, b int) string {
	t.Helper()
	for i := range 100 * contract.Buckets {
		if name := fmt.Sprintf("p%d", i); contract.Bucket(ns, name) == b {
			return name
		}
	}
	t.Fatalf("no name in bucket %d", b)
	return ""
}

// TestWholeFilter checks which objects an informer's Key.Whole keeps whole.
func TestWholeFilter(t *testing.T) {
	const ns = "team-a"
	in3, in17, in200 := nameIn(t, ns, 3), nameIn(t, ns, 17), nameIn(t, ns, 200)
	tests := []struct {
		whole   string
		want    map[string]bool // name -> whole; nil: the filter is nil (every object whole)
		wantErr bool
	}{
		{whole: "", want: nil},
		{whole: NoBuckets, want: map[string]bool{in3: false, in17: false, in200: false}},
		{whole: "3", want: map[string]bool{in3: true, in17: false, in200: false}},
		{whole: "3,17", want: map[string]bool{in3: true, in17: true, in200: false}},
		{whole: "200,3", want: map[string]bool{in3: true, in17: false, in200: true}},
		{whole: "256", wantErr: true},
		{whole: "-1", wantErr: true},
		{whole: "03", wantErr: true},
		{whole: "3,", wantErr: true},
		{whole: "none,3", wantErr: true},
		{whole: "x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.whole, func(t *testing.T) {
			f, err := wholeFilter(tt.whole)
			if (err != nil) != tt.wantErr {
				t.Fatalf("wholeFilter(%q) error %v, want error %v", tt.whole, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if (f == nil) != (tt.want == nil) {
				t.Fatalf("wholeFilter(%q) nil is %v, want %v", tt.whole, f == nil, tt.want == nil)
			}
			if f == nil {
				return
			}
			got := map[string]bool{}
			for name := range tt.want {
				got[name] = f(ns, name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("wholeFilter(%q) (-want +got):\n%s", tt.whole, diff)
			}
		})
	}
}

// TestStubTransform checks what the transform of an informer that holds one bucket
// whole caches: the object of that bucket whole, any other as a stub with its identity,
// deletion timestamp and orphan sighting, which does not decode.
func TestStubTransform(t *testing.T) {
	const ns = "team-a"
	served, other := nameIn(t, ns, 7), nameIn(t, ns, 8)
	parent := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Webapp",
			"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-" + name, "resourceVersion": "42",
				"labels": map[string]any{"tier": "web"}},
			"spec": map[string]any{"image": "nginx"},
		}}
		now := metav1.Now()
		u.SetDeletionTimestamp(&now)
		u.SetFinalizers([]string{metav1.FinalizerOrphanDependents})
		return u
	}
	whole, err := wholeFilter(contract.BucketLabel(7))
	if err != nil {
		t.Fatal(err)
	}
	transform := (&Set{prove: acceptAll}).transform(whole)

	got, err := transform(parent(served))
	if err != nil {
		t.Fatal(err)
	}
	o := got.(*Object)
	if o.Stub() {
		t.Fatalf("%s (bucket 7, served) cached as a stub", served)
	}
	u, err := o.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(parent(served).Object["spec"], u.Object["spec"]); diff != "" {
		t.Errorf("whole parent's spec (-want +got):\n%s", diff)
	}

	got, err = transform(parent(other))
	if err != nil {
		t.Fatal(err)
	}
	s := got.(*Object)
	if !s.Stub() {
		t.Fatalf("%s (bucket 8, not served) cached whole", other)
	}
	type identity struct {
		APIVersion, Kind, Namespace, Name, UID, ResourceVersion string
		Deleting, Orphan                                        bool
	}
	want := identity{"example.com/v1", "Webapp", ns, other, "uid-" + other, "42", true, true}
	if diff := cmp.Diff(want, identity{s.APIVersion, s.Kind, s.GetNamespace(), s.GetName(), string(s.GetUID()), s.GetResourceVersion(),
		s.GetDeletionTimestamp() != nil, s.DeletedWithOrphan()}); diff != "" {
		t.Errorf("stub (-want +got):\n%s", diff)
	}
	if key, _ := StoreKey(s); key != ns+"/"+other {
		t.Errorf("stub's store key %q, want %q", key, ns+"/"+other)
	}
	if _, err := s.Decode(); !errors.Is(err, ErrStub) {
		t.Errorf("Decode of a stub: %v, want ErrStub", err)
	}
	if c := s.DeepCopyObject().(*Object); !c.Stub() {
		t.Error("a copy of a stub is not a stub")
	}
}
