package dev

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/rules"
)

// defaultReadyWait is how long dev waits for its sample parents to turn Ready before it
// says which are not (Options.readyWait, for tests).
const defaultReadyWait = 2 * time.Minute

// readyParent is a sample that rules with a status block serve: it turns Ready when each
// of their Ready conditions is True.
type readyParent struct {
	sample
	conditions []string
}

// readyParents are the samples that rules of rulesData with a status block serve (their
// namespaces and selector; a parent.when is not evaluated), with the Ready condition
// types those rules write. Rules that do not load serve none: the controller reports
// their errors.
func readyParents(rulesData []byte, samples []sample) []readyParent {
	rs, err := rules.Load(rulesData, rules.Options{})
	if err != nil {
		return nil
	}
	var out []readyParent
	for _, s := range samples {
		p := readyParent{sample: s}
		for _, r := range rs.Rules {
			ns := r.Parent.Namespaces
			if r.HasStatus && r.Parent.GVR == s.gvr && (len(ns) == 0 || slices.Contains(ns, s.obj.GetNamespace())) &&
				r.Parent.Selector.Matches(labels.Set(s.obj.GetLabels())) {
				p.conditions = append(p.conditions, r.ReadyCondition)
			}
		}
		if len(p.conditions) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// reportReady waits until every parent is Ready and says so, with the time since start;
// when some are not Ready after the wait, it names them and how to see why. It returns
// when it has said either, or when ctx ends.
func (o *Options) reportReady(ctx context.Context, cfg *rest.Config, parents []readyParent, rulesFile, kubeconfig string, start time.Time) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil || len(parents) == 0 {
		return
	}
	wait := cmp.Or(o.readyWait, defaultReadyWait)
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		var notReady []string
		for _, p := range parents {
			if !parentReady(ctx, client, p) {
				notReady = append(notReady, fmt.Sprintf("%s %s/%s", p.gvr.Resource, p.obj.GetNamespace(), p.obj.GetName()))
			}
		}
		switch {
		case len(notReady) == 0:
			o.reports.print(fmt.Sprintf("%s Ready, %s after the start.", allParents(len(parents)), time.Since(start).Round(100*time.Millisecond)))
			return
		case time.Now().After(deadline):
			o.reports.print(fmt.Sprintf("%d of %d sample %s not Ready %s after the start: %s; `kubecel trace RESOURCE/NAME --rules %s --kubeconfig %s` says why.",
				len(notReady), len(parents), clikit.Plural(len(parents), "parent is", "parents are"), wait, strings.Join(notReady, ", "), rulesFile, kubeconfig))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// allParents is "The sample parent is" or "All N sample parents are".
func allParents(n int) string {
	if n == 1 {
		return "The sample parent is"
	}
	return fmt.Sprintf("All %d sample parents are", n)
}

// parentReady reports whether each of the parent's Ready conditions is True.
func parentReady(ctx context.Context, client dynamic.Interface, p readyParent) bool {
	obj, err := client.Resource(p.gvr).Namespace(p.obj.GetNamespace()).Get(ctx, p.obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return false
	}
	conds := clikit.ConditionsOf(obj.Object, p.conditions...)
	for _, want := range p.conditions {
		if c := clikit.FindCondition(conds, want); c == nil || c.Status != string(metav1.ConditionTrue) {
			return false
		}
	}
	return true
}
