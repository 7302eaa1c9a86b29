package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

func TestStateAnnotationsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		s    State
		want map[string]string
	}{{
		name: "every field",
		s: State{Phase: Paused, Step: 2, From: "h1", StepStarted: t0, HealthySince: t0.Add(90 * time.Second),
			Message: "step 2 (12.5%) not healthy within 10m0s: healthy is false", Steps: []float64{1, 12.5, 100}},
		want: map[string]string{
			AnnotationPhase: "Paused", AnnotationStep: "2", AnnotationFrom: "h1",
			AnnotationStepStarted: "2026-11-25T10:00:00Z", AnnotationHealthySince: "2026-11-25T10:01:30Z",
			AnnotationMessage: "step 2 (12.5%) not healthy within 10m0s: healthy is false", AnnotationSteps: "1,12.5,100",
		},
	}, {
		name: "a first revision, Complete",
		s:    State{Phase: Complete},
		want: map[string]string{AnnotationPhase: "Complete", AnnotationStep: "0", AnnotationFrom: ""},
	}, {
		name: "times in another zone are written in UTC",
		s:    State{Phase: Progressing, Step: 1, From: "h1", StepStarted: t0.In(time.FixedZone("CET", 3600))},
		want: map[string]string{AnnotationPhase: "Progressing", AnnotationStep: "1", AnnotationFrom: "h1", AnnotationStepStarted: "2026-11-25T10:00:00Z"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := stateAnnotations(tt.s)
			if diff := cmp.Diff(tt.want, a); diff != "" {
				t.Errorf("stateAnnotations (-want +got):\n%s", diff)
			}
			got, err := readState(&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "kubecel.web.h2", Annotations: a}})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.s, got); diff != "" {
				t.Errorf("readState(stateAnnotations(s)) (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadStateErrors(t *testing.T) {
	tests := []struct {
		name    string
		a       map[string]string
		wantErr string
	}{{
		name:    "no phase",
		a:       map[string]string{},
		wantErr: `revision kubecel.web.h2: annotation rollout.kubecel.dev/phase is "", want one of Progressing, Paused, Complete, RolledBack, Superseded`,
	}, {
		name:    "unknown phase",
		a:       map[string]string{AnnotationPhase: "Done"},
		wantErr: `revision kubecel.web.h2: annotation rollout.kubecel.dev/phase is "Done", want one of Progressing, Paused, Complete, RolledBack, Superseded`,
	}, {
		name:    "step not a number",
		a:       map[string]string{AnnotationPhase: "Progressing", AnnotationStep: "two"},
		wantErr: `revision kubecel.web.h2: annotation rollout.kubecel.dev/step is "two", want a step count`,
	}, {
		name:    "negative step",
		a:       map[string]string{AnnotationPhase: "Progressing", AnnotationStep: "-1"},
		wantErr: `revision kubecel.web.h2: annotation rollout.kubecel.dev/step is "-1", want a step count`,
	}, {
		name:    "steps not percents",
		a:       map[string]string{AnnotationPhase: "Progressing", AnnotationSteps: "10,half,100"},
		wantErr: `revision kubecel.web.h2: annotation rollout.kubecel.dev/steps is "10,half,100", want percents separated by commas`,
	}, {
		name:    "step started not a time",
		a:       map[string]string{AnnotationPhase: "Progressing", AnnotationStepStarted: "yesterday"},
		wantErr: `revision kubecel.web.h2: annotation rollout.kubecel.dev/step-started is "yesterday", want an RFC 3339 time`,
	}, {
		name:    "healthy since not a time",
		a:       map[string]string{AnnotationPhase: "Progressing", AnnotationHealthySince: "2026-11-25 10:00"},
		wantErr: `revision kubecel.web.h2: annotation rollout.kubecel.dev/healthy-since is "2026-11-25 10:00", want an RFC 3339 time`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readState(&appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "kubecel.web.h2", Annotations: tt.a}})
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("readState: error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestStoreStateProof: a state the installation writes carries a proof of itself and of
// the revision's number; a state or number someone else changed, or wrote, does not
// verify; without the key the store writes no state at all. Update changes the state
// annotations, the proof and the number, and nothing else.
func TestStoreStateProof(t *testing.T) {
	key, err := rules.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	id, err := rules.NewIdentity("kubecel", key)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	s := &Store{Client: client, Namespace: "kubecel-system", Installation: "kubecel", Signer: id}
	created, err := s.Create(t.Context(), "web", "h2", []byte(`{"name":"web"}`), Where{ParentResource: "example.com/v1/webapps"}, 2,
		State{Phase: Progressing, Step: 1, From: "h1", Steps: []float64{10, 100}})
	if err != nil {
		t.Fatal(err)
	}
	if !created.Proven || !created.StateProven {
		t.Fatalf("created revision: proven %v, state proven %v; want both", created.Proven, created.StateProven)
	}
	st, err := Pause(created)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Update(t.Context(), created, created.Number, st)
	if err != nil {
		t.Fatal(err)
	}
	if !got.StateProven || got.Phase != Paused {
		t.Fatalf("updated revision: %s, state proven %v; want Paused, proven", got.Phase, got.StateProven)
	}
	if diff := cmp.Diff(created.Object.Data.Raw, got.Object.Data.Raw); diff != "" || got.Object.Revision != 2 || got.Object.Annotations[contract.AnnotationProof] != created.Object.Annotations[contract.AnnotationProof] {
		t.Errorf("Update changed the document, its proof or the number (revision %d):\n%s", got.Object.Revision, diff)
	}

	tests := []struct {
		name   string
		change func(*appsv1.ControllerRevision)
	}{
		{name: "the phase", change: func(cr *appsv1.ControllerRevision) { cr.Annotations[AnnotationPhase] = string(Complete) }},
		{name: "the step", change: func(cr *appsv1.ControllerRevision) { cr.Annotations[AnnotationStep] = "2" }},
		{name: "the revision it rolls from", change: func(cr *appsv1.ControllerRevision) { cr.Annotations[AnnotationFrom] = "h0" }},
		{name: "the number", change: func(cr *appsv1.ControllerRevision) { cr.Revision = 9 }},
		{name: "a proof copied from another state", change: func(cr *appsv1.ControllerRevision) {
			cr.Annotations[AnnotationPhase], cr.Annotations[AnnotationStateProof] = string(Progressing), created.Object.Annotations[AnnotationStateProof]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := got.Object.DeepCopy()
			tt.change(cr)
			revs, err := s.Decode([]*appsv1.ControllerRevision{cr})
			if err != nil {
				t.Fatal(err)
			}
			if revs[0].StateProven {
				t.Errorf("a state with %s changed by someone else decodes as proven", tt.name)
			}
			if !revs[0].Proven {
				t.Error("the document's proof no longer verifies: only the state's should fail")
			}
		})
	}

	keyless := &Store{Client: client, Namespace: "kubecel-system", Installation: "kubecel"}
	if _, err := keyless.Update(t.Context(), got, got.Number, st); err == nil || !strings.Contains(err.Error(), "without the installation's key") {
		t.Errorf("Update without a signer: error %v, want a refusal", err)
	}
	if _, err := keyless.Create(t.Context(), "web", "h3", nil, Where{}, 3, State{Phase: Progressing}); err == nil ||
		err.Error() != `rule "web": cannot store a revision without the installation's key` {
		t.Errorf("Create without a signer: error %v", err)
	}
}

// TestStoreOriginProof: a revision stored from a team's source carries its origin, and
// its proof covers it: the same revision with another origin, or none, does not verify,
// so that a rule of the same name from another source cannot take it for its own. A
// revision without an origin has the proof earlier versions wrote.
func TestStoreOriginProof(t *testing.T) {
	key, err := rules.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	id, err := rules.NewIdentity("kubecel", key)
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{Client: fake.NewClientset(), Namespace: "kubecel-system", Installation: "kubecel", Signer: id}
	doc := []byte(`{"name":"web"}`)
	created, err := s.Create(t.Context(), "web", "h2", doc, Where{Origin: "configmap rules/team-a"}, 2, State{Phase: Complete})
	if err != nil {
		t.Fatal(err)
	}
	if !created.Proven || created.Origin != "configmap rules/team-a" || created.Object.Annotations[AnnotationOrigin] != "configmap rules/team-a" {
		t.Fatalf("created revision: proven %v, origin %q (annotation %q); want proven, team a's", created.Proven, created.Origin, created.Object.Annotations[AnnotationOrigin])
	}
	plain, err := s.Create(t.Context(), "web", "h1", doc, Where{}, 1, State{Phase: Complete})
	if err != nil {
		t.Fatal(err)
	}
	if _, has := plain.Object.Annotations[AnnotationOrigin]; has || plain.Object.Annotations[contract.AnnotationProof] != id.RevisionProof("web", "", "h1", doc) {
		t.Errorf("a revision without origin: annotations %v; want no origin and the proof of rule, hash and document", plain.Object.Annotations)
	}
	// A revision an earlier version stored for the rule, without its origin, is replaced
	// by one that records it.
	legacy, err := s.Create(t.Context(), "web", "h3", doc, Where{}, 3, State{Phase: Progressing, Step: 1, From: "h2"})
	if err != nil {
		t.Fatal(err)
	}
	replaced, err := s.CreateOrReplace(t.Context(), "web", "h3", doc, Where{Origin: "configmap rules/team-a"}, 4, State{Phase: Complete})
	if err != nil {
		t.Fatalf("CreateOrReplace over a revision without origin: %v", err)
	}
	if !replaced.Proven || replaced.Origin != "configmap rules/team-a" || replaced.Phase != Complete || replaced.Object.UID != legacy.Object.UID {
		t.Errorf("replaced revision: proven %v, origin %q, %s, same object %v; want proven, team a's, Complete, the same object",
			replaced.Proven, replaced.Origin, replaced.Phase, replaced.Object.UID == legacy.Object.UID)
	}
	if _, err := s.CreateOrReplace(t.Context(), "web", "h3", doc, Where{Origin: "configmap rules/team-a"}, 4, State{Phase: Complete}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("CreateOrReplace over the installation's revision of the same origin: error %v, want AlreadyExists", err)
	}

	tests := []struct {
		name   string
		origin func(map[string]string)
	}{
		{name: "another team's origin", origin: func(a map[string]string) { a[AnnotationOrigin] = "configmap rules/team-b" }},
		{name: "no origin", origin: func(a map[string]string) { delete(a, AnnotationOrigin) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := created.Object.DeepCopy()
			tt.origin(cr.Annotations)
			revs, err := s.Decode([]*appsv1.ControllerRevision{cr})
			if err != nil {
				t.Fatal(err)
			}
			if revs[0].Proven {
				t.Errorf("a revision with %s decodes as proven", tt.name)
			}
		})
	}
}

// TestStoreListBadState: a revision whose state cannot be read fails the list, naming
// the rule and the revision.
func TestStoreListBadState(t *testing.T) {
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{
		Name: Name("kubecel", "web", "h1"), Namespace: "kubecel-system",
		Labels:      map[string]string{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelInstallation: "kubecel", contract.LabelRule: "web", LabelRevision: "h1"},
		Annotations: map[string]string{AnnotationPhase: "Complete", AnnotationStep: "x"},
	}}
	s := &Store{Client: fake.NewClientset(cr), Namespace: "kubecel-system", Installation: "kubecel"}
	_, err := s.List(t.Context(), "web")
	want := `rule "web": revision kubecel.web.h1: annotation rollout.kubecel.dev/step is "x", want a step count`
	if err == nil || err.Error() != want {
		t.Fatalf("List: error %v, want %q", err, want)
	}
}
