package rules

import (
	"slices"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
)

// The keys of a Secret's data are not its values: how many there are and which
// (`size(refs.credentials.data)`, `'password' in refs.credentials.data`,
// `has(refs.credentials.data.token)`, `refs.credentials.data.map(k, k)`) is what
// `kubectl describe secret` shows. So check does not warn when only the keys flow into a
// child or the status (flowWarnings); the errors of such an expression are withheld all
// the same, and a name computed from them is still withheld.

// readsSecretValues is readsSecret leaving out the reads of a Secret's data that read only
// its keys.
func (s *sensitivity) readsSecretValues(p *program, each bool) bool {
	return s.reads(p, each, false)
}

// keysOnly reports whether a read of a variable, followed by the selections fields (see
// selections), selects the data of an object (parent.data, refs.<id>.data,
// children.<id>.data, or stringData) and reads only its keys. ancestors are the
// expressions around the variable, the nearest last.
func keysOnly(fields []string, ancestors []celast.Expr) bool {
	if len(fields) == 0 || len(fields) > 2 || !slices.Contains([]string{"data", "stringData"}, fields[len(fields)-1]) {
		return false
	}
	top := len(ancestors) - len(fields) // the expression that selects the data
	if top < 0 {
		return false
	}
	node := ancestors[top]
	for i := top - 1; i >= 0; i-- {
		a := ancestors[i]
		switch a.Kind() {
		case celast.SelectKind:
			// has(data.key): whether a key is there.
			return a.AsSelect().IsTestOnly() && a.AsSelect().Operand() == node
		case celast.ComprehensionKind:
			// A macro over a map iterates its keys; a second variable would be the values.
			comp := a.AsComprehension()
			return comp.IterRange() == node && !comp.HasIterVar2()
		case celast.CallKind:
			call := a.AsCall()
			args := call.Args()
			switch {
			case call.FunctionName() == "orValue" && call.IsMemberFunction() && call.Target() == node:
				node = a // refs.x.?data.orValue({}): the data or the default
				continue
			case call.FunctionName() == "size" && (call.IsMemberFunction() && call.Target() == node || len(args) == 1 && args[0] == node):
				return true
			case call.FunctionName() == operators.In && len(args) == 2 && args[1] == node:
				return true
			}
		}
		return false
	}
	return false
}
