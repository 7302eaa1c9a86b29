package trace

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/rules/contract"
)

// print writes the trace in the format of -o.
func (o *Options) print(w io.Writer, doc *traceDoc) error {
	switch o.Output {
	case "json", "yaml":
		return clikit.PrintData(w, o.Output, doc)
	case "dot":
		return writeTraceDot(w, doc)
	}
	return writeTraceTree(w, doc, o.Output == "wide", time.Now())
}

// traceLine is one row of the tree.
type traceLine struct {
	prefix, name, namespace, apiVersion, synced, ready, created, status string
}

// writeTraceTree prints the trace as a tree: the parent, its rules, and under each rule
// its children, refs and the objects that look like children.
func writeTraceTree(w io.Writer, doc *traceDoc, wide bool, now time.Time) error {
	p := doc.Parent
	lines := []traceLine{{
		name: p.Kind + "/" + p.Name, namespace: p.Namespace, apiVersion: p.APIVersion, created: p.Created,
		synced: condStatus(clikit.FindCondition(p.Conditions, contract.ConditionSynced)),
		ready:  condStatus(clikit.FindCondition(p.Conditions, contract.ConditionReady)),
		status: parentStatus(p),
	}}
	for i, r := range doc.Rules {
		lastRule := i == len(doc.Rules)-1
		lines = append(lines, traceLine{
			prefix: branch(lastRule), name: "rule " + r.Name,
			synced: condStatus(r.Synced), ready: condStatus(r.Ready), status: ruleStatus(r, p.Generation),
		})
		indent := "│  "
		if lastRule {
			indent = "   "
		}
		var rows []traceLine
		for _, c := range r.Children {
			rows = append(rows, childLine(c))
		}
		for _, ref := range r.Refs {
			rows = append(rows, refLine(ref))
		}
		for _, e := range r.Errors {
			rows = append(rows, traceLine{name: "error", synced: "-", ready: "-", status: e})
		}
		for j := range rows {
			rows[j].prefix = indent + branch(j == len(rows)-1)
		}
		lines = append(lines, rows...)
	}
	if doc.header != "" {
		fmt.Fprintln(w, doc.header)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if wide {
		fmt.Fprintln(tw, "NAME\tNAMESPACE\tAPIVERSION\tSYNCED\tREADY\tAGE\tSTATUS")
	} else {
		fmt.Fprintln(tw, "NAME\tSYNCED\tREADY\tSTATUS")
	}
	for _, l := range lines {
		// A message or a readyWhen of several lines would break the table.
		l.status = strings.Join(strings.Fields(l.status), " ")
		if wide {
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.prefix, l.name, clikit.Dash(l.namespace), clikit.Dash(l.apiVersion), l.synced, l.ready, clikit.Age(l.created, now), l.status)
		} else {
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\n", l.prefix, l.name, l.synced, l.ready, l.status)
		}
	}
	return tw.Flush()
}

func branch(last bool) string {
	if last {
		return "└─ "
	}
	return "├─ "
}

func condStatus(c *clikit.Condition) string {
	if c == nil {
		return "-"
	}
	return c.Status
}

// parentStatus is the reasons of the parent's own Synced and Ready conditions: the
// rules' rows below say more.
func parentStatus(p traceObject) string {
	var out []string
	if p.Deleting {
		out = append(out, "Deleting")
	}
	synced, ready := clikit.FindCondition(p.Conditions, contract.ConditionSynced), clikit.FindCondition(p.Conditions, contract.ConditionReady)
	if synced != nil && synced.Status != "True" {
		out = append(out, synced.Reason)
	}
	if ready != nil {
		out = append(out, ready.Reason)
	}
	return strings.Join(out, ", ")
}

// ruleStatus says where the rule stands on the parent: the condition that is not True,
// with its message, else the Ready reason.
func ruleStatus(r traceRule, generation int64) string {
	var s string
	switch {
	case !r.Selected:
		return "NotSelected: " + r.NotSelected
	case r.Synced != nil && r.Synced.Status != "True":
		s = joinReason(r.Synced.Reason, r.Synced.Message)
	case r.Ready != nil && r.Ready.Status != "True":
		s = joinReason(r.Ready.Reason, r.Ready.Message)
	case r.Ready != nil:
		s = r.Ready.Reason
	default:
		s = "NoStatus: no conditions written yet"
		if !r.WritesStatus {
			s = "NoStatus: the rule writes no status"
		}
		if r.EvaluatedReady {
			return s + "; evaluated now: ready"
		}
		return s + "; evaluated now: not ready"
	}
	if c := r.Ready; c != nil && generation > 0 && c.ObservedGeneration > 0 && c.ObservedGeneration < generation {
		s += fmt.Sprintf(" (as of generation %d; the parent is at %d)", c.ObservedGeneration, generation)
	}
	return s
}

func childLine(c traceChild) traceLine {
	name := c.Kind
	if c.Name != "" {
		name += "/" + c.Name
	}
	switch {
	case c.ID != "" && c.Lifecycle != "":
		name += " (" + c.ID + ", " + c.Lifecycle + ")"
	case c.ID != "":
		name += " (" + c.ID + ")"
	}
	l := traceLine{name: name, namespace: c.Namespace, apiVersion: c.APIVersion, created: c.Created, synced: "-", ready: "-"}
	if own := clikit.FindCondition(c.Conditions, contract.ConditionSynced); own != nil {
		l.synced = own.Status
	}
	switch c.State {
	case stateReady:
		l.ready = "True"
	case stateNotReady:
		l.ready = "False"
	}
	l.status = c.State
	if c.Message != "" {
		l.status += ": " + c.Message
	}
	if c.Expression != "" {
		l.status += " (" + c.Expression + ")"
	}
	return l
}

func refLine(r traceRef) traceLine {
	name := "refs." + r.ID + ": " + r.Kind
	status := r.State
	switch {
	case r.Selector != "":
		name += " matching " + r.Selector
		status += fmt.Sprintf(": %d %s", r.Found, clikit.Plural(r.Found, "object", "objects"))
	case r.Name != "":
		name += "/" + r.Name
	}
	if r.Message != "" {
		status += ": " + r.Message
	}
	if r.Expression != "" {
		status += " (" + r.Expression + ")"
	}
	return traceLine{name: name, namespace: r.Namespace, apiVersion: r.APIVersion, synced: "-", ready: "-", status: status}
}
