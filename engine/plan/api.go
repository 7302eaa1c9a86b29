package plan

import (
	"fmt"
	"strings"
)

// APIChange is what the rules' api block of one rule would do to its
// CustomResourceDefinition in the cluster.
type APIChange struct {
	Rule string `json:"rule"`
	// CRD is the CRD's name (plural.group).
	CRD string `json:"crd"`
	// Action is create, update, unchanged or refused.
	Action string `json:"action"`
	// Foreign is set when the CRD was not made by the installation from this rule's
	// source: kubecel never writes it. Unknown (false) without the installation's key.
	Foreign bool `json:"foreign,omitempty"`
	// Stored counts the objects stored under the CRD, when a change breaks some.
	Stored int `json:"stored,omitempty"`
	// Fields are the changes an update would make.
	Fields []APIFieldChange `json:"changes,omitempty"`
	// Reason says why the change is refused.
	Reason string `json:"reason,omitempty"`
}

// APIFieldChange is one change of a CRD: the field, what changes, and for a breaking
// change the number of stored objects it breaks.
type APIFieldChange struct {
	Path     string `json:"path,omitempty"`
	What     string `json:"what"`
	Breaking bool   `json:"breaking,omitempty"`
	Breaks   int    `json:"breaks,omitempty"`
}

func (f APIFieldChange) String() string {
	s := f.What
	if f.Path != "" {
		s = f.Path + ": " + f.What
	}
	if f.Breaking {
		s += fmt.Sprintf(" (breaking: %d stored %s)", f.Breaks, plural(f.Breaks, "object breaks", "objects break"))
	}
	return s
}

// Changes reports whether applying the rules would write the CRD.
func (a APIChange) Changes() bool { return a.Action == "create" || a.Action == "update" }

// Refused reports whether the rule's api cannot be applied (an error of the plan).
func (a APIChange) Refused() bool { return a.Action == "refused" }

// Text renders the change the way plan prints it: + create, ~ update with the field
// changes, ! refused with each change and the stored objects it breaks; "" when
// nothing changes.
func (a APIChange) Text() string {
	head := fmt.Sprintf("CustomResourceDefinition %s (rule %s's api)", a.CRD, a.Rule)
	var b strings.Builder
	switch a.Action {
	case "create":
		b.WriteString("+ " + head)
	case "update":
		b.WriteString("~ " + head)
	case "refused":
		b.WriteString("! " + head + ": refused, " + a.Reason)
	default:
		return ""
	}
	for _, f := range a.Fields {
		b.WriteString("\n    " + f.String())
	}
	return b.String()
}
