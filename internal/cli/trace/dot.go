package trace

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kubecel/kubecel/internal/cli/clikit"
)

// writeTraceDot prints the trace as a Graphviz digraph: the parent, its rules, each
// rule's children and the objects it reads, coloured by state (green ready, yellow on
// its way, red failed or held by another, grey not kubecel's or on its way out).
func writeTraceDot(w io.Writer, doc *traceDoc) error {
	var b strings.Builder
	if doc.header != "" {
		b.WriteString("// " + doc.header + "\n")
	}
	b.WriteString("digraph trace {\n  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\"];\n")
	p := doc.Parent
	node := func(id, label, color, extra string) {
		fmt.Fprintf(&b, "  %s [label=%s, fillcolor=%s%s];\n", strconv.Quote(id), strconv.Quote(label), color, extra)
	}
	edge := func(from, to, extra string) {
		fmt.Fprintf(&b, "  %s -> %s%s;\n", strconv.Quote(from), strconv.Quote(to), extra)
	}
	node("parent", p.Kind+"\n"+p.Name, conditionColor(p.Conditions), "")
	for i, r := range doc.Rules {
		rid := fmt.Sprintf("rule/%d", i)
		color := "palegreen"
		switch {
		case !r.Selected:
			color = "lightgrey"
		case r.Synced != nil && r.Synced.Status != "True", len(r.Errors) > 0:
			color = "lightpink"
		case r.Ready == nil && !r.EvaluatedReady, r.Ready != nil && r.Ready.Status != "True":
			color = "lightyellow"
		}
		node(rid, "rule "+r.Name, color, ", shape=ellipse")
		edge("parent", rid, "")
		for j, c := range r.Children {
			cid := fmt.Sprintf("%s/child/%d", rid, j)
			label := c.Kind
			if c.Name != "" {
				label += "\n" + c.Name
			}
			if c.ID != "" {
				label += "\n(" + c.ID + ")"
			}
			node(cid, label+"\n"+c.State, stateColor(c.State), "")
			edge(rid, cid, "")
		}
		for j, ref := range r.Refs {
			fid := fmt.Sprintf("%s/ref/%d", rid, j)
			label := "refs." + ref.ID + "\n" + ref.Kind
			if ref.Name != "" {
				label += "/" + ref.Name
			}
			color := map[string]string{refFound: "palegreen", refAbsent: "palegreen", refMissing: "lightyellow", refWaiting: "lightyellow"}[ref.State]
			if color == "" {
				color = "lightpink"
			}
			node(fid, label+"\n"+ref.State, color, ", shape=note")
			edge(rid, fid, " [style=dashed, label=\"reads\"]")
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func conditionColor(conds []clikit.Condition) string {
	if c := clikit.FindCondition(conds, "Ready"); c != nil && c.Status == "True" {
		return "palegreen"
	}
	if len(conds) == 0 {
		return "white"
	}
	return "lightyellow"
}

func stateColor(state string) string {
	switch state {
	case stateReady:
		return "palegreen"
	case stateNotReady, stateMissing, stateWaiting:
		return "lightyellow"
	case stateFailed, stateTaken:
		return "lightpink"
	}
	return "lightgrey"
}
