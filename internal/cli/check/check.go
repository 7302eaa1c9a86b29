package check

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/rules"
)

// Options are check's flags.
type Options struct {
	// Rules are the --rules files and directories (- for the standard input).
	Rules []string
	// CRDs is the --crds directory to type-check against, "" for none.
	CRDs string
	// Cluster connects to the cluster whose CRDs and served kinds to check against,
	// when FromCluster is set.
	Cluster *clikit.ClusterFlags
	// FromCluster checks against the cluster: a flag that chooses one was given.
	FromCluster bool
	// Output is the format: text, json or yaml.
	Output string
	// Limits load the rules as the controller loads them.
	Limits clikit.LoadLimits
}

// Run loads and checks the rules (type-checked against --crds or the cluster when
// given) and prints what it found: problems and warnings on s.ErrOut with a summary
// on s.Out, or every finding as data. Problems exit with status 1.
func Run(ctx context.Context, o *Options, s clikit.Streams) error {
	docs, err := rulesfrom.Read(s.In, o.Rules)
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	file := rulesfrom.Name(o.Rules)
	opts := o.Limits.Options()
	var from string
	switch {
	case o.CRDs != "":
		if opts.Schemas, err = clikit.ReadCRDs(o.CRDs); err != nil {
			return &clikit.ExitError{Code: 1, Err: err}
		}
		from = "--crds"
	case o.FromCluster:
		if opts.Schemas, opts.Served, err = clusterSchemas(ctx, o.Cluster); err != nil {
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
		return o.refuse(s, file, list)
	}
	var apiErrs, apiNotices []*rules.Error
	if from == "the cluster's CRDs" {
		if apiErrs, apiNotices, err = apiProblems(ctx, o.Cluster, rs); err != nil {
			return &clikit.ExitError{Code: 1, Err: err}
		}
		placeWarnings(rs, apiErrs)
	}
	if len(apiErrs) > 0 {
		return o.refuse(s, file, apiErrs)
	}
	warnings := append(append([]*rules.Error(nil), rs.Warnings...), checkWarnings(rs)...)
	placeWarnings(rs, warnings)
	notices := typeCheckNotices(rs, from)
	lifecycle := append(lifecycleNotes(rs), apiNotices...)
	placeWarnings(rs, notices)
	placeWarnings(rs, lifecycle)
	if o.Output != "text" {
		found := append(diagnostics(file, warnings, "warning"), diagnostics(file, notices, noticeSeverity)...)
		found = append(found, diagnostics(file, lifecycle, noticeSeverity)...)
		return clikit.PrintData(s.Out, o.Output, found)
	}
	for _, w := range warnings {
		at, text := located(file, w)
		fmt.Fprintf(s.ErrOut, "%s: warning: %s\n", at, text)
	}
	for _, n := range append(notices, lifecycle...) {
		at, text := located(file, n)
		fmt.Fprintf(s.ErrOut, "%s: notice: %s\n", at, text)
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
	fmt.Fprintln(s.Out, summary)
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
func (o *Options) refuse(s clikit.Streams, file string, errs []*rules.Error) error {
	failed := &clikit.ExitError{Code: 1, Err: fmt.Errorf("%s: %d %s", file, len(errs), clikit.Plural(len(errs), "problem", "problems"))}
	if o.Output != "text" {
		if err := clikit.PrintData(s.Out, o.Output, diagnostics(file, errs, "error")); err != nil {
			return err
		}
		return failed
	}
	printProblems(s.ErrOut, file, errs)
	return failed
}
