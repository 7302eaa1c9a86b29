package dev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/examples"
	"github.com/kubecel/kubecel/rules"
)

// installs returns what dev installs at start: the CRDs (the examples', then those of
// --crds) and the rules file's content (the examples' rules, then those of --rules).
func (o *Options) installs() ([]*apiextensionsv1.CustomResourceDefinition, []byte, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	var rulesData []byte
	if !o.NoExamples {
		var err error
		if crds, err = exampleCRDs(); err != nil {
			return nil, nil, err
		}
		if rulesData, err = examples.Rules(); err != nil {
			return nil, nil, fmt.Errorf("combine the examples' rules: %w", err)
		}
	}
	if o.CRDs != "" {
		own, err := crdsOfDir(o.CRDs)
		if err != nil {
			return nil, nil, err
		}
		crds = append(crds, own...)
	}
	switch {
	case o.Rules != "":
		data, err := os.ReadFile(o.Rules)
		if err != nil {
			return nil, nil, fmt.Errorf("--rules: %w", err)
		}
		if len(rulesData) > 0 {
			rulesData = append(append(rulesData, []byte("\n---\n# "+o.Rules+"\n")...), data...)
		} else {
			rulesData = data
		}
	case len(rulesData) == 0:
		rulesData = []byte(emptyRules)
	}
	return crds, rulesData, nil
}

// crdsOfDir reads the CRDs of --crds DIR.
func crdsOfDir(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--crds %s: no such file or directory", dir)
	}
	crds, err := rules.ReadCRDDir(dir)
	if err != nil {
		return nil, err
	}
	return crds, nil
}

// applyObjects applies the examples' sample parents and the objects of -f, and returns
// them.
func (o *Options) applyObjects(ctx context.Context, cfg *rest.Config) ([]sample, error) {
	var objs []*unstructured.Unstructured
	if !o.NoExamples {
		var err error
		if objs, err = exampleObjects(); err != nil {
			return nil, err
		}
	}
	for _, f := range o.Objects {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("-f: %w", err)
		}
		docs, err := decodeObjects(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		objs = append(objs, docs...)
	}
	return applySamples(ctx, cfg, objs)
}
