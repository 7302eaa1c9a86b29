// Package builtin is the format of the built-in kinds' schemas that package rules embeds
// and that cmd genbuiltin writes: gzip-compressed JSON of a File.
package builtin

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// File holds the schemas of the kinds of one Kubernetes version.
type File struct {
	// KubernetesVersion is the API server's gitVersion, e.g. v1.36.3.
	KubernetesVersion string `json:"kubernetesVersion"`
	// Kinds are sorted by group, version and kind.
	Kinds []Kind `json:"kinds"`
	// Definitions are the OpenAPI component schemas by name. A schema's Ref names another
	// definition, whose schema stands in its place.
	Definitions map[string]apiextensionsv1.JSONSchemaProps `json:"definitions"`
}

// Kind is one kind and the resource that serves it.
type Kind struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Kind       string `json:"kind"`
	Resource   string `json:"resource"`
	Namespaced bool   `json:"namespaced"`
	// Schema names the kind's definition.
	Schema string `json:"schema"`
}

// Encode returns f as gzip-compressed JSON, the same bytes for the same File.
func Encode(f *File) ([]byte, error) {
	raw, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode reads what Encode wrote.
func Decode(data []byte) (*File, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("built-in schemas: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("built-in schemas: %w", err)
	}
	f := &File{}
	if err := json.Unmarshal(raw, f); err != nil {
		return nil, fmt.Errorf("built-in schemas: %w", err)
	}
	return f, nil
}
