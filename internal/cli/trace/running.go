package trace

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/cli/revisions"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// tracedVersion is the version of a rule that trace evaluates for one parent: when the
// rules are the installation's running revisions, the one the controller runs for it.
type tracedVersion struct {
	rule *rules.Rule
	// rev is its stored revision, nil when the rules came from elsewhere; note says, for
	// the first line, which revision is traced and why.
	rev  *rollout.Revision
	note string
}

// version picks the version of a served rule that trace evaluates for parent, as the
// controller picks it: the current revision, but the revision a rollout rolls from for
// a parent that is not at the current one and not in the steps taken, and the revision a
// rule rolled back is held at for every parent.
func (s *traceSetup) version(ctx context.Context, r *rules.Rule, parent *unstructured.Unstructured) (tracedVersion, error) {
	rr := s.rules.Running[r.Name]
	if rr == nil {
		return tracedVersion{rule: r}, nil
	}
	cur := rr.Cur
	at := tracedVersion{rule: r, rev: cur, note: fmt.Sprintf("%s at %s", r.Name, revisions.Text(cur))}
	switch {
	case rr.Held():
		return tracedVersion{rule: rr.Stable, rev: rr.From,
			note: fmt.Sprintf("%s at %s, where it is held: revision %d was rolled back", r.Name, revisions.Text(rr.From), cur.Number)}, nil
	case !rr.Rolling():
		return at, nil
	}
	rolling := fmt.Sprintf("%s at step %s", cur.Phase, revisions.StepText(cur.State))
	if revisions.AtRevision(parent, cur) {
		at.note += ", " + rolling + ", which has reached this parent"
		return at, nil
	}
	items, err := revisions.ListParents(ctx, s.client.dyn, cur)
	if err != nil {
		return tracedVersion{}, err
	}
	if slices.Contains(revisions.StepMembers(cur, items), revisions.ParentKey(parent)) {
		at.note += ", " + rolling + ", whose steps taken hold this parent"
		return at, nil
	}
	return tracedVersion{rule: rr.Stable, rev: rr.From,
		note: fmt.Sprintf("%s at %s, as revision %d, %s, has not reached this parent", r.Name, revisions.Text(rr.From), cur.Number, rolling)}, nil
}

// traceHeader is the first line of a trace whose rules came from the cluster: where
// from, and the revision traced of each rule.
func traceHeader(l *rulesfrom.Loaded, notes []string) string {
	h := l.Header()
	if h == "" || len(notes) == 0 {
		return h
	}
	return h + ": " + strings.Join(notes, "; ")
}

// revisionNotes say, for the first line of a summary, the current revision of each rule
// served, and its phase when its rollout is not Complete.
func (s *traceSetup) revisionNotes() []string {
	var notes []string
	for _, r := range s.served {
		rr := s.rules.Running[r.Name]
		if rr == nil {
			continue
		}
		note := fmt.Sprintf("%s at %s", r.Name, revisions.Text(rr.Cur))
		switch {
		case rr.Held() && rr.From != nil:
			note = fmt.Sprintf("%s at %s, where it is held: revision %d was rolled back", r.Name, revisions.Text(rr.From), rr.Cur.Number)
		case rr.Cur.Phase != rollout.Complete:
			note += fmt.Sprintf(", %s at step %s", rr.Cur.Phase, revisions.StepText(rr.Cur.State))
		}
		notes = append(notes, note)
	}
	return notes
}
