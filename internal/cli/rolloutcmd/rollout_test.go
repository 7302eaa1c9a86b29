package rolloutcmd

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// unsigned is what an operation says of the state it replaced when that state did not
// carry the installation's proof (revisionObject's do not).
const unsigned = "note: the state revision 2 (h2) held was not written by this installation (its proof did not verify); the one written now is"

// testIdentity is an installation with a key of its own.
func testIdentity(t *testing.T) *rules.Identity {
	t.Helper()
	key, err := rules.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	id, err := rules.NewIdentity("kubecel", key)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestRolloutOpConflict: an operation whose write meets a Conflict reads the revision
// again and retries, a few times, then gives the Conflict up.
func TestRolloutOpConflict(t *testing.T) {
	for _, tt := range []struct {
		name      string
		conflicts int
		wantErr   string
		wantLine  string
	}{
		{name: "one conflict", conflicts: 1, wantLine: "rule web: paused at step 1 of 2 (10%)\n" + unsigned},
		{name: "four conflicts", conflicts: conflictRetries - 1, wantLine: "rule web: paused at step 1 of 2 (10%)\n" + unsigned},
		{name: "always a conflict", conflicts: 100,
			wantErr: `rule "web": update revision 2 (h2): Operation cannot be fulfilled on controllerrevisions.apps "kubecel.web.h2": changed meanwhile`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(revisionObject("h1", 1, rollout.Complete, ""), revisionObject("h2", 2, rollout.Progressing, "h1"))
			updates, lists := 0, 0
			client.PrependReactor("list", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
				lists++
				return false, nil, nil
			})
			client.PrependReactor("update", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
				updates++
				if updates <= tt.conflicts {
					return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, "kubecel.web.h2", errors.New("changed meanwhile"))
				}
				return false, nil, nil
			})
			c := &rolloutClient{store: &rollout.Store{Client: client, Namespace: "kubecel-system", Installation: "kubecel", Signer: testIdentity(t)}}
			line, err := c.apply(t.Context(), Pause, "web")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("apply: error %v, want %q", err, tt.wantErr)
				}
				if updates != conflictRetries || lists != conflictRetries {
					t.Errorf("apply tried %d updates after %d reads, want %d of each", updates, lists, conflictRetries)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if line != tt.wantLine {
				t.Errorf("apply = %q, want %q", line, tt.wantLine)
			}
			if lists != tt.conflicts+1 {
				t.Errorf("apply read the revisions %d times, want %d", lists, tt.conflicts+1)
			}
			got, err := client.AppsV1().ControllerRevisions("kubecel-system").Get(t.Context(), "kubecel.web.h2", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p := got.Annotations[rollout.AnnotationPhase]; p != "Paused" {
				t.Errorf("phase annotation %q after pause, want Paused", p)
			}
		})
	}
}

func revisionObject(hash string, n int64, phase rollout.Phase, from string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: rollout.Name("kubecel", "web", hash), Namespace: "kubecel-system",
			Labels: map[string]string{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelInstallation: "kubecel", contract.LabelRule: "web", rollout.LabelRevision: hash},
			Annotations: map[string]string{
				rollout.AnnotationPhase: string(phase), rollout.AnnotationStep: "1", rollout.AnnotationFrom: from, rollout.AnnotationSteps: "10,100",
			},
		},
		Revision: n,
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("short", 10); got != "short" {
		t.Errorf("truncate kept %q", got)
	}
	if got := truncate("a message of some length", 10); got != "a messa..." {
		t.Errorf("truncate = %q", got)
	}
	if got := truncate("ééééééééééé", 10); got != "ééééééé..." {
		t.Errorf("truncate cut a character: %q", got)
	}
}
