package render

import (
	"fmt"
	"strings"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/rules"
)

// admitParent gives render and test a parent of a kind the rules define as the API
// server would store it: with the defaults of the rules' api, without the fields it
// does not declare (each noted). A parent the API server would refuse is an error
// naming its fields. Parents of other kinds are returned as they are.
func (o *Output) admitParent(rs *rules.RuleSet, parent map[string]any) (map[string]any, error) {
	admitted, err := rs.Admit(parent)
	switch {
	case err != nil:
		ns, name := clikit.ObjectName(parent)
		return nil, fmt.Errorf("%s %s: %w", parent["kind"], clikit.Namespaced(ns, name), err)
	case admitted == nil:
		return parent, nil
	}
	if len(admitted.Dropped) > 0 {
		ns, name := clikit.ObjectName(parent)
		o.Note(fmt.Sprintf("%s %s: the API server drops %s, which the rules' api does not declare", parent["kind"], clikit.Namespaced(ns, name), strings.Join(admitted.Dropped, ", ")))
	}
	return admitted.Object, nil
}
