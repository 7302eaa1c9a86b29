package rollouts

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// fakeEngine is the controller as the rollouts see it, with one running rule.
type fakeEngine struct {
	rule *Rule
	idle bool
}

func (e *fakeEngine) Rollout(string) *Rule                 { return e.rule }
func (e *fakeEngine) Enqueue(watch.Key)                    {}
func (e *fakeEngine) Restart(context.Context, *watch.Rule) {}
func (e *fakeEngine) StopStable(*Rule, *watch.Rule)        {}
func (e *fakeEngine) Idle() bool                           { return e.idle }

// creates counts the ControllerRevisions created on client.
func creates(client *fake.Clientset) (n int) {
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "controllerrevisions" {
			n++
		}
	}
	return n
}

// firstStart is a rule started with nothing stored for it: what Prepare and Commit
// make of it, on a fake API server.
func firstStart(t *testing.T) (*Revisions, *fake.Clientset, *Rule) {
	t.Helper()
	id := testenv.FixedIdentity("kubecel")
	client := fake.NewClientset()
	v := &Revisions{Store: &rollout.Store{Client: client, Namespace: "kubecel-system", Installation: "kubecel", Signer: id}, Keep: rollout.DefaultKeep}
	r := &rules.Rule{Name: "web", Revision: "h1", Document: []byte(`{"name":"web"}`)}
	p, err := v.Prepare(t.Context(), nil, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	target := &watch.Rule{Rule: r, ParentKind: watch.Kind{GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "webs"}}}
	rev := v.Commit(t.Context(), r, p, target)
	if rev == nil || rev.Object != nil || rev.Number != 1 || rev.Phase != rollout.Complete {
		t.Fatalf("Commit of a first revision returned %+v, want number 1, Complete, not stored", rev)
	}
	if n := creates(client); n != 0 {
		t.Fatalf("Commit of a first revision created %d ControllerRevisions, want 0: the rollouts store it", n)
	}
	return v, client, NewRule(target, nil, rev)
}

// TestFirstRevisionWaitsForIdle: a rule's first revision is stored by the rollouts once
// no parent is queued or reconciled, or once it waited firstWithin, and then carries the
// installation's proof.
func TestFirstRevisionWaitsForIdle(t *testing.T) {
	tests := []struct {
		name      string
		idle      bool
		startedAt time.Duration // before now
		wantAfter time.Duration
		wantSaved bool
	}{
		{name: "busy, just started", idle: false, wantAfter: idleEvery},
		{name: "idle", idle: true, wantSaved: true},
		{name: "busy for too long", idle: false, startedAt: DefaultFirstWithin + time.Second, wantSaved: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, client, r := firstStart(t)
			r.started = time.Now().Add(-tt.startedAt)
			c := New(v, &fakeEngine{rule: r, idle: tt.idle}, nil)
			after, err := c.process(t.Context(), "web")
			if err != nil {
				t.Fatal(err)
			}
			if after != tt.wantAfter {
				t.Errorf("look again after %v, want %v", after, tt.wantAfter)
			}
			if got := creates(client) == 1; got != tt.wantSaved {
				t.Fatalf("revision stored: %v, want %v", got, tt.wantSaved)
			}
			revs, err := v.Store.List(t.Context(), "web")
			if err != nil {
				t.Fatal(err)
			}
			if !tt.wantSaved {
				if len(revs) != 0 {
					t.Errorf("stored revisions: %d, want none", len(revs))
				}
				return
			}
			if len(revs) != 1 || !revs[0].Proven || !revs[0].StateProven {
				t.Fatalf("stored revisions: %+v, want one, proven", revs)
			}
			if diff := cmp.Diff([]any{"h1", int64(1), rollout.Complete}, []any{revs[0].Hash, revs[0].Number, revs[0].Phase}); diff != "" {
				t.Errorf("stored revision (-want +got):\n%s", diff)
			}
			if r.Revision().Object == nil {
				t.Error("the rule does not see its revision stored")
			}
		})
	}
}

// TestStoreFirst: a reload stores the first revision the running version has not stored
// yet, once, before it reads the rule's revisions.
func TestStoreFirst(t *testing.T) {
	v, client, r := firstStart(t)
	for i, want := range []bool{true, false} {
		stored, err := v.StoreFirst(t.Context(), r)
		if err != nil {
			t.Fatal(err)
		}
		if stored != want {
			t.Errorf("call %d: stored %v, want %v", i+1, stored, want)
		}
	}
	if n := creates(client); n != 1 {
		t.Errorf("ControllerRevisions created: %d, want 1", n)
	}
	revs, err := v.Store.List(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 1 || !revs[0].Proven || r.Revision().Object == nil {
		t.Errorf("after StoreFirst: stored %+v, the rule's revision stored: %v; want one proven, seen by the rule", revs, r.Revision().Object != nil)
	}
}
