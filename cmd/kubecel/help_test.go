package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpExamples checks that the help of every command of kubecel (cobra's help and
// completion commands aside) shows examples, and that each example is a command line
// that kubecel takes: the command exists, and its flags and arguments parse.
func TestHelpExamples(t *testing.T) {
	root := newRootCommand()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		t.Run(c.CommandPath(), func(t *testing.T) {
			if c.Example == "" {
				t.Fatal("no examples in --help")
			}
			n := 0
			for line := range strings.Lines(c.Example) {
				args, ok := exampleArgs(line)
				if !ok {
					continue
				}
				n++
				if err := parseExample(root, args); err != nil {
					t.Errorf("example %q: %v", strings.TrimSpace(line), err)
				}
			}
			if n == 0 {
				t.Errorf("no example runs kubecel:\n%s", c.Example)
			}
		})
	}
	walk(root)
}

// exampleArgs returns the arguments of an example line that runs kubecel, up to a
// redirection or pipe; single quotes group words as in a shell.
func exampleArgs(line string) ([]string, bool) {
	line = strings.TrimSpace(line)
	rest, ok := strings.CutPrefix(line, "kubecel ")
	if !ok {
		return nil, line == "kubecel"
	}
	var args []string
	for rest != "" {
		rest = strings.TrimLeft(rest, " ")
		var word string
		switch {
		case rest == "":
		case rest[0] == '>' || rest[0] == '|':
			return args, true
		case rest[0] == '\'':
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				return nil, false
			}
			word, rest = rest[1:end+1], rest[end+2:]
		default:
			word, rest, _ = strings.Cut(rest, " ")
		}
		if word != "" {
			args = append(args, word)
		}
	}
	return args, true
}

// parseExample finds the command of args and parses its flags and arguments as kubecel
// would, without running it.
func parseExample(root *cobra.Command, args []string) error {
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	return c.ValidateArgs(c.Flags().Args())
}
