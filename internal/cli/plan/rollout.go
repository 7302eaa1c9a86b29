package plan

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	engineplan "github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/revisions"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// planRollout is how the planned rules would reach the parents of one rule that has a
// rollout policy: in steps from the revision the cluster runs, or at once.
type planRollout struct {
	Rule string `json:"rule"`
	// Revision is the planned text's revision; From the revision the steps roll from
	// ("" when the revision applies at once) and FromNumber its number.
	Revision   string `json:"revision"`
	From       string `json:"from,omitempty"`
	FromNumber int64  `json:"fromNumber,omitempty"`
	// AtOnce says why there are no steps; State is the rollout under way when the
	// planned text is the rule's current revision.
	AtOnce string     `json:"atOnce,omitempty"`
	State  string     `json:"state,omitempty"`
	Steps  []planStep `json:"steps,omitempty"`
	Error  string     `json:"error,omitempty"`
}

// planStep is one step of a planned rollout: the parents it adds.
type planStep struct {
	Percent float64                `json:"percent"`
	Parents []engineplan.ObjectRef `json:"parents"`
}

// planRollouts works out, for every planned rule with a rollout policy, the steps its
// text would take from the revisions stored in the cluster, with the parents each step
// takes (in the order the controller takes them: canaries first).
func planRollouts(ctx context.Context, cfg *rest.Config, store rollout.Store, rs *rules.RuleSet, only string, plans []engineplan.ParentPlan) []planRollout {
	var out []planRollout
	kube, err := kubernetes.NewForConfig(cfg)
	for _, r := range rs.Rules {
		if r.Rollout == nil || only != "" && r.Name != only {
			continue
		}
		pr := planRollout{Rule: r.Name, Revision: r.Revision}
		if err != nil {
			pr.Error = err.Error()
			out = append(out, pr)
			continue
		}
		store.Client = kube
		revs, err := store.List(ctx, r.Name)
		if err != nil {
			pr.Error = err.Error()
			out = append(out, pr)
			continue
		}
		ch, changed := rollout.Start(revs, r.Revision, true, time.Now())
		switch {
		case !changed:
			cur := rollout.Find(revs, r.Revision)
			if cur.Phase == rollout.Complete {
				continue // nothing to roll out
			}
			pr.State = fmt.Sprintf("revision %d is the current revision, %s at step %d of %d", cur.Number, cur.Phase, cur.Step, len(r.Rollout.Steps))
			if from := rollout.Find(revs, cur.From); cur.Phase == rollout.RolledBack && from != nil {
				pr.State += fmt.Sprintf("; held at %s until the rule's text changes", revisions.Text(from))
			}
		case ch.State.Phase != rollout.Progressing:
			pr.AtOnce = "the rule's first revision"
			if ch.Update != nil {
				pr.AtOnce = fmt.Sprintf("the text of revision %d, which completed", ch.Update.Number)
			}
		default:
			from := rollout.Find(revs, ch.State.From)
			pr.From, pr.FromNumber = from.Hash, from.Number
			pr.Steps = stepsOf(r, plans)
		}
		out = append(out, pr)
	}
	return out
}

// stepsOf divides a rule's planned parents into its rollout's steps.
func stepsOf(r *rules.Rule, plans []engineplan.ParentPlan) []planStep {
	var parents []rollout.Parent
	refs := map[rollout.Parent]engineplan.ObjectRef{}
	for _, pp := range plans {
		if pp.Rule != r.Name {
			continue
		}
		p := rollout.Parent{Namespace: pp.Parent.Namespace, Name: pp.Parent.Name, Canary: pp.Canary}
		parents = append(parents, p)
		refs[p] = pp.Parent
	}
	rollout.Order(parents, r.Revision)
	steps := make([]planStep, len(r.Rollout.Steps))
	taken := 0
	for i, pct := range r.Rollout.Steps {
		m := rollout.Members(r.Rollout.Steps, i+1, len(parents))
		steps[i] = planStep{Percent: pct, Parents: []engineplan.ObjectRef{}}
		for _, p := range parents[taken:m] {
			steps[i].Parents = append(steps[i].Parents, refs[p])
		}
		taken = m
	}
	return steps
}

// writeTextRollouts prints the planned rollouts, each step with at most 10 parents.
func writeTextRollouts(w io.Writer, rollouts []planRollout, p palette) {
	for _, pr := range rollouts {
		switch {
		case pr.Error != "":
			fmt.Fprintln(w, p.line(fmt.Sprintf("! rule %s: cannot plan its rollout: %s", pr.Rule, pr.Error)))
		case pr.State != "":
			fmt.Fprintf(w, "rule %s: %s\n", pr.Rule, pr.State)
		case pr.AtOnce != "":
			fmt.Fprintf(w, "rule %s: revision %s applies to every parent at once: it is %s\n", pr.Rule, pr.Revision, pr.AtOnce)
		default:
			fmt.Fprintf(w, "rule %s: revision %s rolls out from revision %d (%s) in %d %s:\n", pr.Rule, pr.Revision, pr.FromNumber, pr.From, len(pr.Steps), clikit.Plural(len(pr.Steps), "step", "steps"))
			for i, s := range pr.Steps {
				fmt.Fprintf(w, "  step %d (%g%%): %s\n", i+1, s.Percent, stepParents(s.Parents, i == 0))
			}
		}
		fmt.Fprintln(w)
	}
}

// stepParents names the parents a step adds, at most 10.
func stepParents(refs []engineplan.ObjectRef, first bool) string {
	more := " more"
	if first {
		more = ""
	}
	if len(refs) == 0 {
		return "no" + more + " parent"
	}
	names := make([]string, 0, min(len(refs), 10))
	for _, r := range refs[:min(len(refs), 10)] {
		names = append(names, strings.TrimPrefix(r.Namespace+"/"+r.Name, "/"))
	}
	if len(refs) > 10 {
		names = append(names, fmt.Sprintf("and %d more", len(refs)-10))
	}
	return fmt.Sprintf("%d%s %s: %s", len(refs), more, clikit.Plural(len(refs), "parent", "parents"), strings.Join(names, ", "))
}
