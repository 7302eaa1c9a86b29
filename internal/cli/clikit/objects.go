package clikit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ReadObjects reads the objects of a multi-document YAML (or JSON) file (- for stdin) as
// JSON-like maps, with integers as int64, the way the API machinery hands them out.
func ReadObjects(stdin io.Reader, file string) ([]map[string]any, error) {
	data, file, err := ReadInput(stdin, file)
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
