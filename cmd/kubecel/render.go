package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/rules"
)

type renderOptions struct {
	rules  []string
	files  []string
	output string
	crds   string
	limits clikit.LoadLimits
}

func newRenderCommand() *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "render --rules FILE -f PARENTS [-f OBSERVED]... [-o yaml|json] [--crds DIR]",
		Short: "Print the children and status that the rules compute for parents, offline",
		Long: `render evaluates the rules for parent objects without a cluster and prints the
children exactly as the controller would apply them (namespace, kubecel's labels and
annotation, owner reference) and the status it would write.

The first -f file holds the parents (one or several YAML documents). A parent without
metadata.uid gets the placeholder <parent-uid> where the API server's UID would be, and
the kubecel.dev/proof annotation, which only the installation's key makes, is <proof>.
Every further -f file holds observed objects (multi-document YAML): the children as they
exist, so that readyWhen, children.<id> and the status fields that read children can be
tried. An observed object belongs to the child named by its kubecel.dev/child label
(objects labelled for another parent are left out), or else to the desired child with
the same kind and name.

The rules that apply are those whose parent resource matches the parent's apiVersion and
kind, and whose namespaces and selector admit it. With --crds, the kind is mapped to its
resource by the CRDs (and expressions are type-checked against their schemas);
without, the resource is guessed as the lowercase plural of the kind (WebApp -> webapps,
Policy -> policies), as kubectl does for unknown kinds.

Output (-o yaml, the default) is one YAML document per child, each under a comment that
names its rule and child, then for each rule with a status block a document with the
parent's status. -o json prints the same documents as a v1 List. Secret data is
redacted. Exit status 1 when the rules do not load or an expression fails.

--rules may be given several times and may name a directory (its *.yaml files, sorted):
all load as one rule set. A file given as - is the standard input: --rules - reads the
rules from it, -f - the parents or observed objects (one of them only).`,
		Example: `  # the children and status of each parent of a file
  kubecel render --rules rules.yaml -f parents.yaml

  # with the children as they exist, and the CRDs that default and check the parents
  kubecel render --rules rules.yaml --crds crds/ -f parents.yaml -f observed.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	rulesfrom.AddRulesFlag(cmd.Flags(), &o.rules)
	cmd.Flags().StringArrayVarP(&o.files, "filename", "f", nil, "the parent objects, then files of observed children (repeatable; - for the standard input)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "yaml", "output format: yaml or json")
	cmd.Flags().StringVar(&o.crds, "crds", "", "directory of CustomResourceDefinition manifests, for kind-to-resource mapping and type checking")
	o.limits.AddFlags(cmd.Flags())
	_ = cmd.MarkFlagRequired("rules")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func (o *renderOptions) run(cmd *cobra.Command) error {
	if o.output != "yaml" && o.output != "json" {
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("unknown output format %q: use yaml or json", o.output)}
	}
	if err := clikit.OneStdin(o.rules, o.files); err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	stdin := cmd.InOrStdin()
	rs, crds, err := loadRules(stdin, o.rules, o.crds, o.limits.Options())
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	parents, err := readObjects(stdin, o.files[0])
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	if len(parents) == 0 {
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("%s: no parent object", clikit.InputName(o.files[0]))}
	}
	var observed []map[string]any
	for _, f := range o.files[1:] {
		objs, err := readObjects(stdin, f)
		if err != nil {
			return &clikit.ExitError{Code: 1, Err: err}
		}
		observed = append(observed, objs...)
	}
	schemas := rs.Schemas() // the CRDs of --crds, and the APIs the rules define
	out := &renderOutput{yaml: o.output == "yaml", stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(), schemas: schemas}
	var failed, unmatched []error
	for _, parent := range parents {
		errs, err := out.renderParent(cmd.Context(), rs, crds, parent, observed)
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
			out.note(err.Error())
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

// renderParent evaluates every rule that selects parent, with the observed objects (the
// children as they exist, and the objects refs read), and records the outcome. It
// returns the errors of evaluation and shaping, or unmatched when no rule selects the
// parent.
func (o *renderOutput) renderParent(ctx context.Context, rs *rules.RuleSet, crds *rules.CRDSchemas, parent map[string]any, observed []map[string]any) (failed []error, unmatched error) {
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

// loadRules reads and loads the --rules files and directories (- for stdin) as one rule
// set, with the schemas of a CRD directory if given.
func loadRules(stdin io.Reader, paths []string, crdDir string, opts rules.Options) (*rules.RuleSet, *rules.CRDSchemas, error) {
	docs, err := rulesfrom.Read(stdin, paths)
	if err != nil {
		return nil, nil, err
	}
	var crds *rules.CRDSchemas
	if crdDir != "" {
		if crds, err = clikit.ReadCRDs(crdDir); err != nil {
			return nil, nil, err
		}
		opts.Schemas = crds
	}
	rs, err := rules.LoadDocuments(docs, opts)
	if err != nil {
		return nil, nil, err // each problem names its file and line
	}
	return rs, crds, nil
}

// readObjects reads the objects of a multi-document YAML (or JSON) file (- for stdin) as
// JSON-like maps, with integers as int64, the way the API machinery hands them out.
func readObjects(stdin io.Reader, file string) ([]map[string]any, error) {
	data, file, err := clikit.ReadInput(stdin, file)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []map[string]any
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		jsonDoc, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(jsonDoc, &obj); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if obj == nil {
			continue // an empty document
		}
		if _, ok := obj["kind"].(string); !ok {
			return nil, fmt.Errorf("%s: document %d is not a Kubernetes object (no kind)", file, i)
		}
		objs = append(objs, obj)
	}
}
