package clikit

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// OutputFlag is the -o/--output flag of a command that prints data. The first of its
// formats is the default; any other value is refused while the flags are parsed.
type OutputFlag struct {
	// Value is the format given.
	Value string
	// Formats are those the command prints.
	Formats []string
}

// AddFlag adds -o/--output to f, with the formats the command prints (the first is the
// default).
func (o *OutputFlag) AddFlag(f *pflag.FlagSet, formats ...string) {
	o.Formats = formats
	o.Value = formats[0]
	f.VarP(o, "output", "o", "output format: "+strings.Join(formats, ", "))
}

func (o *OutputFlag) Set(s string) error {
	if !slices.Contains(o.Formats, s) {
		return fmt.Errorf("unknown output format %q: use %s", s, OrList(o.Formats))
	}
	o.Value = s
	return nil
}

func (o *OutputFlag) String() string { return o.Value }
func (o *OutputFlag) Type() string   { return "format" }

// OrList joins words as "a, b or c".
func OrList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// PrintData writes v as indented JSON or as YAML (through its JSON form, so the json
// tags name the fields in both).
func PrintData(w io.Writer, format string, v any) error {
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
