package clikit

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/kubecel/kubecel/rules"
)

// LoadLimits are the limits every command that loads rules takes, so that it loads and
// evaluates them as the controller does: the children of a parent under a rule that sets
// no maxChildren, and the rules and bytes of one source.
type LoadLimits struct {
	maxChildren, maxRules, maxBytes countFlag
}

// AddFlags adds --max-children, --max-rules-per-source and --max-source-bytes.
func (l *LoadLimits) AddFlags(f *pflag.FlagSet) {
	l.maxChildren.what, l.maxChildren.def = "a number of children", rules.DefaultMaxChildren
	f.Var(&l.maxChildren, "max-children", fmt.Sprintf("most children one parent may have under a rule that sets no maxChildren (0: %d)", rules.DefaultMaxChildren))
	l.maxRules.what, l.maxRules.def = "a number of rules", rules.DefaultMaxRulesPerSource
	f.Var(&l.maxRules, "max-rules-per-source", fmt.Sprintf("most rules one source (a file, a ConfigMap key) may hold (0: %d)", rules.DefaultMaxRulesPerSource))
	l.maxBytes.what, l.maxBytes.def = "a size in bytes", rules.DefaultMaxSourceBytes
	f.Var(&l.maxBytes, "max-source-bytes", fmt.Sprintf("largest size of one source of rules, in bytes (0: %d)", rules.DefaultMaxSourceBytes))
}

// Options are the rules.Options the limits set.
func (l LoadLimits) Options() rules.Options {
	return rules.Options{MaxChildren: l.maxChildren.n, MaxRulesPerSource: l.maxRules.n, MaxSourceBytes: l.maxBytes.n}
}

// countFlag is a count that 0 sets to its default.
type countFlag struct {
	n, def int
	what   string
}

func (c *countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want %s, or 0 for the default (%d)", c.what, c.def)
	}
	c.n = n
	return nil
}

func (c *countFlag) String() string { return strconv.Itoa(c.n) }
func (c *countFlag) Type() string   { return "int" }
