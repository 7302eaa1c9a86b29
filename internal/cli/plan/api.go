package plan

import (
	"fmt"
	"io"
	"strings"

	engineplan "github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/rules"
)

// writeTextAPIs prints what the rules' api blocks would do to their CRDs: + create,
// ~ update with each change, ! refused with each change and the stored objects it
// breaks. CRDs that stay as they are print nothing.
func writeTextAPIs(w io.Writer, apis []engineplan.APIChange, p palette) {
	for _, a := range apis {
		text := a.Text()
		if text == "" {
			continue
		}
		for _, l := range strings.Split(text, "\n") {
			fmt.Fprintln(w, p.line(l))
		}
		fmt.Fprintln(w)
	}
}

// selected are the rules plan covers: every rule, or the one --rule names.
func (o *Options) selected(rs *rules.RuleSet) []*rules.Rule {
	if o.Rule == "" {
		return rs.Rules
	}
	var out []*rules.Rule
	for _, r := range rs.Rules {
		if r.Name == o.Rule {
			out = append(out, r)
		}
	}
	return out
}
