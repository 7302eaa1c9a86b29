package clikit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/kubecel/kubecel/rules"
)

// ReadCRDs reads the CRDs of --crds DIR, saying so when DIR does not exist.
func ReadCRDs(dir string) (*rules.CRDSchemas, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--crds %s: no such file or directory", dir)
	}
	return rules.SchemasFromCRDDir(dir)
}
