package rollout

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubecel/kubecel/rules/contract"
)

// Phase is where a revision's rollout stands.
type Phase string

const (
	// Progressing: the steps are being taken; parents of the steps taken are at the
	// revision, the others at the one it rolls from.
	Progressing Phase = "Progressing"
	// Paused: as Progressing, but no further step is taken until `kubecel rollout
	// resume`. A step that failed its deadline with onFailure: Pause ends here.
	Paused Phase = "Paused"
	// Complete: every parent is at the revision.
	Complete Phase = "Complete"
	// RolledBack: every parent is back at the revision it rolled from, and stays there
	// until the rule's text changes (`kubecel rollout undo`, or onFailure: Rollback).
	RolledBack Phase = "RolledBack"
	// Superseded: the rules changed again before the rollout ended; a newer revision's
	// rollout took its place.
	Superseded Phase = "Superseded"
)

// Labels and annotations of a revision.
const (
	// LabelRevision holds the revision's hash (rules.Rule.Revision).
	LabelRevision = "kubecel.dev/revision"
	// AnnotationPhase and the annotations below carry the rollout's state.
	AnnotationPhase        = "rollout.kubecel.dev/phase"
	AnnotationStep         = "rollout.kubecel.dev/step"
	AnnotationFrom         = "rollout.kubecel.dev/from"
	AnnotationStepStarted  = "rollout.kubecel.dev/step-started"
	AnnotationHealthySince = "rollout.kubecel.dev/healthy-since"
	AnnotationMessage      = "rollout.kubecel.dev/message"
	AnnotationSteps        = "rollout.kubecel.dev/steps"
	// AnnotationStateProof proves the state annotations above and the revision's
	// number (rules.Identity.RolloutStateProof).
	AnnotationStateProof = "rollout.kubecel.dev/state-proof"
	// AnnotationParentResource, AnnotationReadyCondition and AnnotationSyncedCondition
	// say, for the commands, where a revision's parents are and which conditions tell
	// their revision and readiness; they are part of the revision and never change.
	AnnotationParentResource  = "rollout.kubecel.dev/parent-resource"
	AnnotationReadyCondition  = "rollout.kubecel.dev/ready-condition"
	AnnotationSyncedCondition = "rollout.kubecel.dev/synced-condition"
	// AnnotationOrigin is the origin of the rule's text (rules.Rule.Origin: the team's
	// ConfigMap it was read from), absent for rules from files and the named ConfigMap;
	// the revision's proof covers it, so that a rule never takes a revision of the same
	// name from another source for its own.
	AnnotationOrigin = "rollout.kubecel.dev/origin"
)

// State is the rollout state a revision carries.
type State struct {
	Phase Phase
	// Step is how many steps were taken: the parents of steps[0..Step-1] are at the
	// revision, and step Step-1 is the one being checked. 0 before the first.
	Step int
	// From is the revision the rollout started from ("" for a rule's first revision).
	From string
	// StepStarted is when the current step began (its progressDeadline counts from it);
	// HealthySince is when the step was first seen healthy (its pause counts from it).
	StepStarted, HealthySince time.Time
	// Message says why the rollout paused or rolled back, naming the failing parents.
	Message string
	// Steps are the policy's steps when the state was written (percents).
	Steps []float64
}

// Where says where a revision's text came from, where its parents are and which of
// their conditions tell their revision (Synced) and readiness (Ready).
type Where struct {
	// Origin is the rule's rules.Rule.Origin ("" for files and the named ConfigMap).
	Origin string
	// ParentResource is group/version/resource ("" group for the core group: /v1/pods).
	ParentResource                  string
	ReadyCondition, SyncedCondition string
}

// Revision is one stored revision of a rule.
type Revision struct {
	Rule string
	// Hash is rules.Rule.Revision; Number orders the revisions of a rule (kubectl
	// rollout history's REVISION).
	Hash   string
	Number int64
	State
	// Document is the rule's source (rules.Rule.Document); Proven reports whether its
	// proof is the installation's, StateProven whether the proof of its State and
	// Number is (both always false when read without the key).
	Document    []byte
	Proven      bool
	StateProven bool
	Where
	// Object is the stored ControllerRevision.
	Object *appsv1.ControllerRevision
}

// Name is the ControllerRevision name of a revision: unique per installation, rule
// and hash (rule names and installations are DNS labels, so the dots separate them).
func Name(installation, rule, hash string) string {
	return installation + "." + rule + "." + hash
}

// stateAnnotations are the annotations that encode s.
func stateAnnotations(s State) map[string]string {
	a := map[string]string{
		AnnotationPhase: string(s.Phase),
		AnnotationStep:  strconv.Itoa(s.Step),
		AnnotationFrom:  s.From,
	}
	if !s.StepStarted.IsZero() {
		a[AnnotationStepStarted] = s.StepStarted.UTC().Format(time.RFC3339)
	}
	if !s.HealthySince.IsZero() {
		a[AnnotationHealthySince] = s.HealthySince.UTC().Format(time.RFC3339)
	}
	if s.Message != "" {
		a[AnnotationMessage] = s.Message
	}
	if len(s.Steps) > 0 {
		parts := make([]string, len(s.Steps))
		for i, p := range s.Steps {
			parts[i] = strconv.FormatFloat(p, 'g', -1, 64)
		}
		a[AnnotationSteps] = strings.Join(parts, ",")
	}
	return a
}

// stateText is the text of a state's annotations that its proof covers: each key and
// value, sorted by key.
func stateText(ann map[string]string) []byte {
	keys := make([]string, 0, len(ann))
	for k := range ann {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b []byte
	for _, k := range keys {
		b = fmt.Appendf(b, "%d:%s=%d:%s;", len(k), k, len(ann[k]), ann[k])
	}
	return b
}

// readState decodes the state annotations of a revision.
func readState(cr *appsv1.ControllerRevision) (State, error) {
	a := cr.Annotations
	s := State{Phase: Phase(a[AnnotationPhase]), From: a[AnnotationFrom], Message: a[AnnotationMessage]}
	switch s.Phase {
	case Progressing, Paused, Complete, RolledBack, Superseded:
	default:
		return s, fmt.Errorf("revision %s: annotation %s is %q, want one of Progressing, Paused, Complete, RolledBack, Superseded", cr.Name, AnnotationPhase, a[AnnotationPhase])
	}
	if v := a[AnnotationStep]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s, fmt.Errorf("revision %s: annotation %s is %q, want a step count", cr.Name, AnnotationStep, v)
		}
		s.Step = n
	}
	if v := a[AnnotationSteps]; v != "" {
		for _, part := range strings.Split(v, ",") {
			p, err := strconv.ParseFloat(part, 64)
			if err != nil {
				return s, fmt.Errorf("revision %s: annotation %s is %q, want percents separated by commas", cr.Name, AnnotationSteps, v)
			}
			s.Steps = append(s.Steps, p)
		}
	}
	for key, t := range map[string]*time.Time{AnnotationStepStarted: &s.StepStarted, AnnotationHealthySince: &s.HealthySince} {
		if v := a[key]; v != "" {
			parsed, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return s, fmt.Errorf("revision %s: annotation %s is %q, want an RFC 3339 time", cr.Name, key, v)
			}
			*t = parsed
		}
	}
	return s, nil
}

// revisionLabels are the labels of a rule's revisions.
func revisionLabels(installation, rule string) map[string]string {
	return map[string]string{
		contract.LabelManagedBy:    contract.ManagedByValue,
		contract.LabelInstallation: installation,
		contract.LabelRule:         rule,
	}
}
