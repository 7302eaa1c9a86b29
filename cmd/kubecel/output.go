package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// outputFlag is the -o/--output flag of a command that prints data. The first of its
// formats is the default; any other value is refused while the flags are parsed.
type outputFlag struct {
	value   string
	formats []string
}

func (o *outputFlag) addFlag(f *pflag.FlagSet, formats ...string) {
	o.formats = formats
	o.value = formats[0]
	f.VarP(o, "output", "o", "output format: "+strings.Join(formats, ", "))
}

func (o *outputFlag) Set(s string) error {
	if !slices.Contains(o.formats, s) {
		return fmt.Errorf("unknown output format %q: use %s", s, orList(o.formats))
	}
	o.value = s
	return nil
}

func (o *outputFlag) String() string { return o.value }
func (o *outputFlag) Type() string   { return "format" }

// completeOutputs makes shell completion offer the formats of every command's -o.
func completeOutputs(cmd *cobra.Command) {
	if f := cmd.Flags().Lookup("output"); f != nil {
		if o, ok := f.Value.(*outputFlag); ok {
			_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.formats, cobra.ShellCompDirectiveNoFileComp))
		}
	}
	for _, sub := range cmd.Commands() {
		completeOutputs(sub)
	}
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// printData writes v as indented JSON or as YAML (through its JSON form, so the json
// tags name the fields in both).
func printData(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // <stdin> stays readable
		return enc.Encode(v)
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("cannot print data as %q", format)
}
