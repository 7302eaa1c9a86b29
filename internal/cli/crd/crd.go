package crd

import (
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/rules/apischema"
)

// Options are kubecel crd's flags.
type Options struct {
	// Rules are the --rules files and directories (- for the standard input).
	Rules []string
	// Rule prints only this rule's CRD, when set.
	Rule string
	// Output is the format: yaml or json.
	Output string
	// Limits load the rules as the controller loads them.
	Limits clikit.LoadLimits
}

// Run prints on s.Out the CustomResourceDefinitions that the rules' api blocks define.
func Run(o *Options, s clikit.Streams) error {
	stdin, stdout := s.In, s.Out
	rs, _, err := rulesfrom.LoadFiles(stdin, o.Rules, "", o.Limits.Options())
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	type doc struct {
		rule string
		obj  map[string]any
	}
	var docs []doc
	found := false
	for _, r := range rs.Rules {
		if o.Rule != "" && r.Name != o.Rule {
			continue
		}
		found = true
		if crd := r.CRD(); crd != nil {
			obj, err := apischema.Manifest(crd)
			if err != nil {
				return err
			}
			docs = append(docs, doc{rule: r.Name, obj: obj})
		}
	}
	file := rulesfrom.Name(o.Rules)
	switch {
	case o.Rule != "" && !found:
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("%s has no rule %q", file, o.Rule)}
	case len(docs) == 0 && o.Rule != "":
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("rule %q has no api block: it names an existing resource", o.Rule)}
	case len(docs) == 0:
		return &clikit.ExitError{Code: 1, Err: errors.New(file + ": no rule has an api block")}
	}
	if o.Output == "json" {
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{}}
		for _, d := range docs {
			list["items"] = append(list["items"].([]any), d.obj)
		}
		return clikit.PrintData(stdout, "json", list)
	}
	for i, d := range docs {
		if i > 0 {
			fmt.Fprintln(stdout, "---")
		}
		data, err := yaml.Marshal(d.obj)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "# the api of rule %q\n%s", d.rule, data)
	}
	return nil
}
