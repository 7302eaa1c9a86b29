package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

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

// TestStoreUpdateWithoutSigner: the commands' store (no key) changes the state
// annotations and the number, and nothing else: not the document, not the proof.
func TestStoreUpdateWithoutSigner(t *testing.T) {
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: Name("kubecel", "web", "h2"), Namespace: "kubecel-system",
			Labels: map[string]string{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelInstallation: "kubecel", contract.LabelRule: "web", LabelRevision: "h2"},
			Annotations: map[string]string{
				contract.AnnotationProof: "proof", AnnotationParentResource: "example.com/v1/webapps",
				AnnotationPhase: "Progressing", AnnotationStep: "1", AnnotationFrom: "h1", AnnotationHealthySince: "2026-11-25T10:00:00Z",
				AnnotationSteps: "10,100", "example.com/other": "kept",
			},
		},
		Data:     runtime.RawExtension{Raw: []byte(`{"name":"web"}`)},
		Revision: 2,
	}
	other := cr.DeepCopy()
	other.Name, other.Labels = Name("kubecel", "api", "h9"), map[string]string{contract.LabelManagedBy: contract.ManagedByValue, contract.LabelInstallation: "kubecel", contract.LabelRule: "api", LabelRevision: "h9"}
	client := fake.NewClientset(cr, other)
	s := &Store{Client: client, Namespace: "kubecel-system", Installation: "kubecel"}
	revs, err := s.List(t.Context(), "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 1 || revs[0].Hash != "h2" || revs[0].Proven || revs[0].ParentResource != "example.com/v1/webapps" {
		t.Fatalf("List = %+v, want the one unproven revision h2 of rule web", revs)
	}
	st, err := Pause(revs[0])
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Update(t.Context(), revs[0], revs[0].Number, st)
	if err != nil {
		t.Fatal(err)
	}
	want := cr.DeepCopy()
	want.Annotations = map[string]string{
		contract.AnnotationProof: "proof", AnnotationParentResource: "example.com/v1/webapps",
		AnnotationPhase: "Paused", AnnotationStep: "1", AnnotationFrom: "h1", AnnotationMessage: "paused by kubecel rollout pause",
		AnnotationSteps: "10,100", "example.com/other": "kept",
	}
	if diff := cmp.Diff(want.Annotations, got.Object.Annotations); diff != "" {
		t.Errorf("annotations after Update (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Data.Raw, got.Object.Data.Raw); diff != "" || got.Object.Revision != 2 {
		t.Errorf("Update changed the document or number (revision %d):\n%s", got.Object.Revision, diff)
	}
	if _, err := s.Create(t.Context(), "web", "h3", nil, Where{}, 3, State{Phase: Progressing}); err == nil ||
		err.Error() != `rule "web": cannot store a revision without the installation's key` {
		t.Errorf("Create without a signer: error %v", err)
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
