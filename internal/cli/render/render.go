package render

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/rules"
)

// Options are render's flags.
type Options struct {
	// Rules are the --rules files and directories (- for the standard input).
	Rules []string
	// Files are -f: the parents, then the observed objects.
	Files []string
	// Output is yaml or json.
	Output string
	// CRDs is the --crds directory, "" for none.
	CRDs string
	// Limits load the rules as the controller loads them.
	Limits clikit.LoadLimits
}

// Run evaluates the rules for each parent of o.Files[0], with the objects of the other
// files as observed, and prints the children and status they compute on s.Out; notes go
// to s.ErrOut. An evaluation that fails exits with status 1.
func Run(ctx context.Context, o *Options, s clikit.Streams) error {
	if o.Output != "yaml" && o.Output != "json" {
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("unknown output format %q: use yaml or json", o.Output)}
	}
	if err := clikit.OneStdin(o.Rules, o.Files); err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	stdin := s.In
	rs, crds, err := rulesfrom.LoadFiles(stdin, o.Rules, o.CRDs, o.Limits.Options())
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	parents, err := clikit.ReadObjects(stdin, o.Files[0])
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	if len(parents) == 0 {
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("%s: no parent object", clikit.InputName(o.Files[0]))}
	}
	var observed []map[string]any
	for _, f := range o.Files[1:] {
		objs, err := clikit.ReadObjects(stdin, f)
		if err != nil {
			return &clikit.ExitError{Code: 1, Err: err}
		}
		observed = append(observed, objs...)
	}
	schemas := rs.Schemas() // the CRDs of --crds, and the APIs the rules define
	out := &Output{YAML: o.Output == "yaml", Stdout: s.Out, Stderr: s.ErrOut, Schemas: schemas}
	var failed, unmatched []error
	for _, parent := range parents {
		errs, err := out.Render(ctx, rs, crds, parent, observed)
		if err != nil {
			unmatched = append(unmatched, err)
		}
		failed = append(failed, errs...)
	}
	if len(unmatched) == len(parents) {
		// No rule takes any of the parents: that is the answer, and an error.
		failed = append(failed, unmatched...)
	} else {
		// Some parents of a sample file may be there to show what a rule leaves out.
		for _, err := range unmatched {
			out.Note(err.Error())
		}
	}
	if err := out.flush(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return &clikit.ExitError{Code: 1, Err: errors.Join(failed...)}
	}
	return nil
}

// Render evaluates every rule that selects parent, with the observed objects (the
// children as they exist, and the objects refs read), and records the outcome. It
// returns the errors of evaluation and shaping, or unmatched when no rule selects the
// parent.
func (o *Output) Render(ctx context.Context, rs *rules.RuleSet, crds *rules.CRDSchemas, parent map[string]any, observed []map[string]any) (failed []error, unmatched error) {
	parent, err := o.admitParent(rs, parent)
	if err != nil {
		return []error{err}, nil
	}
	matched, gr, err := rs.Matching(parent, crds)
	if err != nil {
		return nil, err
	}
	if crds != nil {
		// The parent as the API server would store it: with its CRD's defaults, or
		// refused, which is the parent's error and not the rules'.
		if parent, err = crds.Admit(ctx, parent); err != nil {
			return []error{fmt.Errorf("%w: the API server would refuse this parent, so no rule evaluates it", err)}, nil
		}
	}
	ref := o.parentRef(parent, gr)
	for _, r := range matched {
		res, err := r.EvaluateObserved(ctx, parent, ref, observed)
		if res != nil {
			failed = append(failed, o.add(r, ref, parent, res)...)
		}
		if err != nil {
			failed = append(failed, err)
		}
	}
	return failed, nil
}
