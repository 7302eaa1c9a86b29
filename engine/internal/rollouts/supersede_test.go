package rollouts

import (
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/testenv"
)

// TestSupersedeAfterAConflict: the rollout controller may write a revision's state
// between Prepare's read and Commit; the edit that supersedes the rollout then meets a
// Conflict. It reads the revision again and marks it superseded while it is still under
// way (the first write of it was lost before), and leaves alone one that finished.
func TestSupersedeAfterAConflict(t *testing.T) {
	tests := []struct {
		name string
		// meanwhile is the phase the rollout controller wrote after Prepare's read.
		meanwhile rollout.Phase
		want      rollout.Phase
	}{
		{name: "still progressing", meanwhile: rollout.Progressing, want: rollout.Superseded},
		{name: "paused meanwhile", meanwhile: rollout.Paused, want: rollout.Superseded},
		{name: "rolled back meanwhile", meanwhile: rollout.RolledBack, want: rollout.RolledBack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := testenv.FixedIdentity("kubecel")
			client := fake.NewClientset()
			store := &rollout.Store{Client: client, Namespace: "kubecel-system", Installation: "kubecel", Signer: id}
			read, err := store.Create(t.Context(), "web", "h2", []byte(`{"name":"web"}`), rollout.Where{}, 2,
				rollout.State{Phase: rollout.Progressing, Step: 1, From: "h1", Steps: []float64{10, 100}})
			if err != nil {
				t.Fatal(err)
			}
			st := read.State
			st.Phase, st.Step = tt.meanwhile, 2
			if _, err := store.Update(t.Context(), read, read.Number, st); err != nil {
				t.Fatal(err)
			}
			// The fake keeps no resourceVersions: the first update of the stale copy is
			// refused as the API server refuses it.
			var updates atomic.Int32
			client.PrependReactor("update", "controllerrevisions", func(clienttesting.Action) (bool, runtime.Object, error) {
				if updates.Add(1) == 1 {
					return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, read.Object.Name, nil)
				}
				return false, nil, nil
			})
			v := &Revisions{Store: store}
			if err := v.supersede(t.Context(), read, 3, "h3"); err != nil {
				t.Fatalf("supersede: %v", err)
			}
			revs, err := store.List(t.Context(), "web")
			if err != nil {
				t.Fatal(err)
			}
			got := rollout.Find(revs, "h2")
			if diff := cmp.Diff(tt.want, got.Phase); diff != "" || !got.StateProven {
				t.Errorf("revision 2 after supersede (-want +got, state proven %v):\n%s", got.StateProven, diff)
			}
		})
	}
}
