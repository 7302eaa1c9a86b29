package rulesfrom

import (
	"io"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/rules"
)

// LoadFiles reads and loads the --rules files and directories (- for stdin) as one rule
// set, with the schemas of a CRD directory if given.
func LoadFiles(stdin io.Reader, paths []string, crdDir string, opts rules.Options) (*rules.RuleSet, *rules.CRDSchemas, error) {
	docs, err := Read(stdin, paths)
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
