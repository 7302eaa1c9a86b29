package trace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/rules"
)

// traceSummary is what `kubecel trace TYPE` prints: per rule serving the type, its
// parents by state.
type traceSummary struct {
	Resource string        `json:"resource"`
	Rules    []ruleSummary `json:"rules"`
	// RulesFrom names where the rules came from (traceDoc.RulesFrom).
	RulesFrom string `json:"rulesFrom"`
	// header is the text output's first line, when the rules came from the cluster.
	header string
}

type ruleSummary struct {
	Rule   string       `json:"rule"`
	States []stateCount `json:"states"`
}

// stateCount is the parents of a rule in one state: Ready, Synced=False REASON,
// Ready=False REASON, NoStatus (no conditions written yet, or no status block),
// NotSelected (parent.when is false), Deleting.
type stateCount struct {
	State   string   `json:"state"`
	Count   int      `json:"count"`
	Parents []string `json:"parents"`
}

// summary lists the parents of every rule that serves the type and sorts them by state.
func (o *Options) summary(ctx context.Context, streams clikit.Streams, typ string) (*traceSummary, error) {
	if o.Output == "dot" {
		return nil, errors.New("-o dot draws one parent: give TYPE/NAME")
	}
	s, err := o.setup(ctx, streams, typ)
	if err != nil {
		return nil, err
	}
	namespaced := s.mapping.Scope.Name() != meta.RESTScopeNameRoot
	sum := &traceSummary{Resource: s.mapping.Resource.GroupResource().String(), Rules: []ruleSummary{},
		RulesFrom: s.rules.From, header: traceHeader(s.rules, s.revisionNotes())}
	for _, r := range s.served {
		m := *s.mapping
		m.Resource = r.Parent.GVR
		list, err := s.client.resource(&m, o.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("rule %q: list %s: %w", r.Name, r.Parent.GVR.GroupResource(), err)
		}
		byState := map[string]*stateCount{}
		for i := range list.Items {
			u := &list.Items[i]
			if !r.Selects(u.GetNamespace(), namespaced, u.GetLabels()) {
				continue
			}
			state := parentState(ctx, r, u.Object, u.GetDeletionTimestamp() != nil)
			sc := byState[state]
			if sc == nil {
				sc = &stateCount{State: state}
				byState[state] = sc
			}
			sc.Count++
			name := u.GetName()
			if u.GetNamespace() != "" {
				name = u.GetNamespace() + "/" + name
			}
			sc.Parents = append(sc.Parents, name)
		}
		rs := ruleSummary{Rule: r.Name, States: []stateCount{}}
		for _, sc := range byState {
			slices.Sort(sc.Parents)
			rs.States = append(rs.States, *sc)
		}
		slices.SortFunc(rs.States, func(a, b stateCount) int {
			return cmp.Or(cmp.Compare(stateRank(a.State), stateRank(b.State)), cmp.Compare(a.State, b.State))
		})
		sum.Rules = append(sum.Rules, rs)
	}
	return sum, nil
}

// parentState is where one parent stands for rule r, from the conditions the
// controller wrote.
func parentState(ctx context.Context, r *rules.Rule, parent map[string]any, deleting bool) string {
	if deleting {
		return "Deleting"
	}
	// Only parent.when is of interest here: an evaluation without children or refs
	// stops there when it is false.
	if res, _ := r.Evaluate(ctx, parent, nil); res != nil && res.Skip {
		return "NotSelected"
	}
	if !r.HasStatus {
		return "NoStatus"
	}
	conds := clikit.ConditionsOf(parent, r.SyncedCondition, r.ReadyCondition)
	synced, ready := clikit.FindCondition(conds, r.SyncedCondition), clikit.FindCondition(conds, r.ReadyCondition)
	switch {
	case synced != nil && synced.Status != "True":
		return "Synced=" + synced.Status + " " + synced.Reason
	case ready != nil && ready.Status != "True":
		return "Ready=" + ready.Status + " " + ready.Reason
	case ready != nil:
		return "Ready"
	}
	return "NoStatus"
}

func stateRank(state string) int {
	switch {
	case state == "Ready":
		return 0
	case strings.HasPrefix(state, "Synced="), strings.HasPrefix(state, "Ready="):
		return 1
	}
	return 2
}

// summaryExamples is how many parents a state lists in the text summary.
const summaryExamples = 5

func (o *Options) printSummary(w io.Writer, sum *traceSummary) error {
	if o.Output == "json" || o.Output == "yaml" {
		return clikit.PrintData(w, o.Output, sum)
	}
	if sum.header != "" {
		fmt.Fprintln(w, sum.header)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSTATE\tPARENTS\tNAMES")
	for _, r := range sum.Rules {
		if len(r.States) == 0 {
			fmt.Fprintf(tw, "%s\t-\t0\t\n", r.Rule)
		}
		for _, s := range r.States {
			names := s.Parents
			more := ""
			if len(names) > summaryExamples && o.Output != "wide" {
				more = fmt.Sprintf(", and %d more", len(names)-summaryExamples)
				names = names[:summaryExamples]
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s%s\n", r.Rule, s.State, s.Count, strings.Join(names, ", "), more)
		}
	}
	return tw.Flush()
}
