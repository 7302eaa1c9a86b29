package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/rules"
)

type checkOptions struct {
	rules   []string
	crds    string
	cluster *clikit.ClusterFlags
	output  clikit.OutputFlag
	limits  clikit.LoadLimits
}

func newCheckCommand() *cobra.Command {
	o := checkOptions{cluster: clikit.NewClusterFlags()}
	cmd := &cobra.Command{
		Use:   "check --rules FILE|DIR... [--crds DIR | --kubeconfig FILE [--context NAME]] [-o text|json|yaml]",
		Short: "Validate and type-check rules files",
		Long: `check loads a rules file the way the controller does: strict YAML, names, resources
and selectors, CEL syntax and types, references between children and their cycles, and
the estimated cost of every expression. Parents and children of built-in kinds
(Deployment, Service, ConfigMap, Namespace, ...) are type-checked against the schemas
embedded in kubecel; with --crds, custom resources are too, against the schemas of the
CRDs in DIR, or with --kubeconfig (or --context, or any of kubectl's connection flags)
against the CRDs the cluster serves (parent.spec.replicsa is an error; port: "80" or a
string expression where a child's schema wants an integer is too). Against a cluster, a
parent, child or ref whose kind the cluster does not serve is an error too (a CRD not
installed, ConfigMap under apps/v1, a version the CRD does not serve), although the
controller would run the other rules and start that one once its kinds are served. A
notice names every parent and child that was not type-checked, and how to get its
schema.

It prints a one-line summary and exits 0, or lists every problem with its line, rule,
child, field and expression and exits 1. It also warns (without failing) about children
of sensitive kinds: Secrets, RBAC objects, admission webhooks and policies, and CRDs,
which give whoever writes a parent power over the cluster through the controller; and
about unquoted y, yes, on, n, no and off (YAML 1.1 booleans) as map keys anywhere and as
values in templates, where a string was almost surely meant.

--rules may be given several times and may name a directory (its *.yaml files, sorted);
every YAML document of every file loads into one rule set, as the controller loads them,
so a rule name used twice is an error naming both places. --rules - reads the rules
from the standard input. -o json (or yaml) prints, instead of
text, a list of diagnostics for machines (editors, CI annotations): one object per
error, warning or notice with file, line and column (the 1-based position in the file:
where in the expression the problem is when CEL says, else the field's line and column
0; 0 when unknown), rule, child, field, expression, message and severity
("error", "warning" or "notice"). The exit status is the same: 1 when the rules do not load.`,
		Example: `  # every error of a rules file, offline, with the CRDs of a directory
  kubecel check --rules rules.yaml --crds crds/

  # against the resources and CRDs of a cluster (read only)
  kubecel check --rules rules/ --kubeconfig ~/.kube/config

  # positions in the file, for editors and CI annotations
  kubecel check --rules rules.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	rulesfrom.AddRulesFlag(cmd.Flags(), &o.rules)
	cmd.Flags().StringVar(&o.crds, "crds", "", "directory of CustomResourceDefinition manifests to type-check against")
	o.cluster.AddFlags(cmd.Flags(), "kubeconfig of a cluster whose CRDs and served kinds to check against (instead of --crds)")
	for _, name := range clusterChoosingFlags {
		cmd.MarkFlagsMutuallyExclusive("crds", name)
	}
	o.output.AddFlag(cmd.Flags(), "text", "json", "yaml")
	o.limits.AddFlags(cmd.Flags())
	_ = cmd.MarkFlagRequired("rules")
	return cmd
}

func (o *checkOptions) run(cmd *cobra.Command) error {
	docs, err := rulesfrom.Read(cmd.InOrStdin(), o.rules)
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	file := rulesfrom.Name(o.rules)
	opts := o.limits.Options()
	var from string
	switch {
	case o.crds != "":
		if opts.Schemas, err = clikit.ReadCRDs(o.crds); err != nil {
			return &clikit.ExitError{Code: 1, Err: err}
		}
		from = "--crds"
	case choosesCluster(cmd.Flags()):
		if opts.Schemas, opts.Served, err = clusterSchemas(cmd.Context(), o.cluster); err != nil {
			return &clikit.ExitError{Code: 1, Err: err}
		}
		from = "the cluster's CRDs"
	}
	rs, err := rules.LoadDocuments(docs, opts)
	if err != nil {
		var list rules.ErrorList
		if !errors.As(err, &list) {
			return &clikit.ExitError{Code: 1, Err: err}
		}
		return o.refuse(cmd, file, list)
	}
	var apiErrs, apiNotices []*rules.Error
	if from == "the cluster's CRDs" {
		if apiErrs, apiNotices, err = apiProblems(cmd.Context(), o.cluster, rs); err != nil {
			return &clikit.ExitError{Code: 1, Err: err}
		}
		placeWarnings(rs, apiErrs)
	}
	if len(apiErrs) > 0 {
		return o.refuse(cmd, file, apiErrs)
	}
	warnings := append(append([]*rules.Error(nil), rs.Warnings...), checkWarnings(rs)...)
	placeWarnings(rs, warnings)
	notices := typeCheckNotices(rs, from)
	lifecycle := append(lifecycleNotes(rs), apiNotices...)
	placeWarnings(rs, notices)
	placeWarnings(rs, lifecycle)
	if o.output.Value != "text" {
		found := append(diagnostics(file, warnings, "warning"), diagnostics(file, notices, noticeSeverity)...)
		found = append(found, diagnostics(file, lifecycle, noticeSeverity)...)
		return clikit.PrintData(cmd.OutOrStdout(), o.output.Value, found)
	}
	for _, w := range warnings {
		at, text := located(file, w)
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", at, text)
	}
	for _, n := range append(notices, lifecycle...) {
		at, text := located(file, n)
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: notice: %s\n", at, text)
	}
	children := 0
	for _, r := range rs.Rules {
		children += len(r.Children)
	}
	summary := fmt.Sprintf("%s: OK: %d %s, %d %s", file,
		len(rs.Rules), clikit.Plural(len(rs.Rules), "rule", "rules"), children, clikit.Plural(children, "child", "children"))
	if len(warnings) > 0 {
		summary += fmt.Sprintf(", %d %s", len(warnings), clikit.Plural(len(warnings), "warning", "warnings"))
	}
	summary += typeCheckSummary(notices)
	fmt.Fprintln(cmd.OutOrStdout(), summary)
	return nil
}

// printProblems lists load errors as file:line: message, with the expression and a caret
// under the column where CEL gives one.
func printProblems(w io.Writer, file string, list rules.ErrorList) {
	for _, e := range list {
		at, text := located(file, e)
		fmt.Fprintf(w, "%s: %s\n", at, text)
		if caret := e.Caret(); caret != "" {
			fmt.Fprintln(w, "    "+strings.ReplaceAll(caret, "\n", "\n    "))
		}
	}
}

// placeWarnings gives the warnings about a rule as a whole the source of the rule.
func placeWarnings(rs *rules.RuleSet, warnings []*rules.Error) {
	for _, w := range warnings {
		for _, r := range rs.Rules {
			if w.Source == "" && w.Rule == r.Name {
				w.Source = r.Source
			}
		}
	}
}

// located splits a problem into its place (file:line, or the file when the line is
// unknown) and the rest of its text. The file is the problem's own Source, else file.
func located(file string, e *rules.Error) (at, text string) {
	rest := *e
	rest.Line, rest.Source = 0, ""
	if e.Source != "" {
		file = e.Source
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d", file, e.Line), rest.Error()
	}
	return file, rest.Error()
}

// checkWarnings lists what loads but deserves a second look.
func checkWarnings(rs *rules.RuleSet) []*rules.Error {
	var out []*rules.Error
	for _, r := range rs.Rules {
		for _, c := range r.Children {
			if why := sensitiveKind(c.GVK); why != "" {
				out = append(out, &rules.Error{Rule: r.Name, Child: c.ID,
					Message: fmt.Sprintf("creates %s objects, %s; make sure whoever can write the parent may do that", c.GVK.Kind, why)})
			}
		}
		for _, ref := range r.Refs {
			if ref.CrossNamespace && ref.GVK.Group == "" && ref.GVK.Kind == "Secret" {
				out = append(out, &rules.Error{Rule: r.Name, Ref: ref.ID, Field: "crossNamespace",
					Message: "reads Secrets outside the parent's namespace; make sure whoever can write the parent may read them, or give the namespace as a literal"})
			}
		}
	}
	return out
}

// lifecycleNotes names the children whose objects are kept (released) rather than
// deleted: a policy worth seeing in review.
func lifecycleNotes(rs *rules.RuleSet) []*rules.Error {
	var out []*rules.Error
	for _, r := range rs.Rules {
		for _, c := range r.Children {
			if p := c.Policy(); p != "" {
				out = append(out, &rules.Error{Rule: r.Name, Child: c.ID, Field: "lifecycle", Message: p})
			}
		}
	}
	return out
}

// diagnostic is one error or warning of `kubecel check -o json`.
type diagnostic struct {
	File       string `json:"file"`
	Line       int    `json:"line"`
	Column     int    `json:"column"`
	Rule       string `json:"rule"`
	Child      string `json:"child"`
	Ref        string `json:"ref,omitempty"`
	Field      string `json:"field"`
	Expression string `json:"expression"`
	Message    string `json:"message"`
	Severity   string `json:"severity"`
}

// diagnostics turns problems of one severity into diagnostics (an empty list, not null,
// when there are none).
func diagnostics(file string, problems []*rules.Error, severity string) []diagnostic {
	out := make([]diagnostic, 0, len(problems))
	for _, e := range problems {
		// A position in the file, for editors; the text output gives the field's line
		// and a caret under Column in the expression instead.
		out = append(out, diagnostic{File: cmp.Or(e.Source, file), Line: cmp.Or(e.FileLine, e.Line), Column: e.FileColumn,
			Rule: e.Rule, Child: e.Child, Ref: e.Ref,
			Field: e.Field, Expression: e.Expr, Message: e.Message, Severity: severity})
	}
	return out
}

// sensitiveKind says why children of a kind give power over the cluster, or "" when
// they do not particularly.
func sensitiveKind(gvk schema.GroupVersionKind) string {
	switch gvk.Group {
	case "":
		if gvk.Kind == "Secret" {
			return "which hold credentials"
		}
	case "rbac.authorization.k8s.io":
		if slices.Contains([]string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}, gvk.Kind) {
			return "which grant permissions"
		}
	case "admissionregistration.k8s.io":
		return "which intercept or restrict API requests"
	case "apiextensions.k8s.io":
		if gvk.Kind == "CustomResourceDefinition" {
			return "which change the cluster's API"
		}
	}
	return ""
}

// refuse prints the errors that fail a check, in the output format asked for, and
// returns the exit error that counts them.
func (o *checkOptions) refuse(cmd *cobra.Command, file string, errs []*rules.Error) error {
	failed := &clikit.ExitError{Code: 1, Err: fmt.Errorf("%s: %d %s", file, len(errs), clikit.Plural(len(errs), "problem", "problems"))}
	if o.output.Value != "text" {
		if err := clikit.PrintData(cmd.OutOrStdout(), o.output.Value, diagnostics(file, errs, "error")); err != nil {
			return err
		}
		return failed
	}
	printProblems(cmd.ErrOrStderr(), file, errs)
	return failed
}
