package rules

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// CRDSchemas is a SchemaSource built from CustomResourceDefinition manifests, for
// checking and rendering rules offline. It also maps kinds to resources, which the
// schemas of a cluster's discovery would otherwise do.
type CRDSchemas struct {
	byResource map[schema.GroupVersionResource]*apiextensionsv1.JSONSchemaProps
	byKind     map[schema.GroupVersionKind]*apiextensionsv1.JSONSchemaProps
	resources  map[schema.GroupVersionKind]schema.GroupVersionResource
	// kindScopes and resourceScopes say whether a CRD's objects are namespaced.
	kindScopes     map[schema.GroupKind]bool
	resourceScopes map[schema.GroupResource]bool
	// names maps a CRD's singular name and lowercase kind to its plural resource.
	names map[schema.GroupResource]string
	// status says whether a version of a CRD has the status subresource.
	status map[schema.GroupVersionResource]bool
	// admit is what Admit builds of each kind (admit.go).
	admit admissions
}

// SchemasFromCRDs indexes the schemas of every version of the given CRDs.
func SchemasFromCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) *CRDSchemas {
	s := &CRDSchemas{
		byResource: map[schema.GroupVersionResource]*apiextensionsv1.JSONSchemaProps{},
		byKind:     map[schema.GroupVersionKind]*apiextensionsv1.JSONSchemaProps{},
		resources:  map[schema.GroupVersionKind]schema.GroupVersionResource{},

		kindScopes:     map[schema.GroupKind]bool{},
		resourceScopes: map[schema.GroupResource]bool{},
		names:          map[schema.GroupResource]string{},
		status:         map[schema.GroupVersionResource]bool{},
	}
	for _, crd := range crds {
		for _, name := range []string{crd.Spec.Names.Singular, strings.ToLower(crd.Spec.Names.Kind)} {
			if name != "" && name != crd.Spec.Names.Plural {
				s.names[schema.GroupResource{Group: crd.Spec.Group, Resource: name}] = crd.Spec.Names.Plural
			}
		}
		if scope := crd.Spec.Scope; scope == apiextensionsv1.NamespaceScoped || scope == apiextensionsv1.ClusterScoped {
			namespaced := scope == apiextensionsv1.NamespaceScoped
			s.kindScopes[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = namespaced
			s.resourceScopes[schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}] = namespaced
		}
		for _, v := range crd.Spec.Versions {
			gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			s.resources[gvk] = gvr
			s.status[gvr] = v.Subresources != nil && v.Subresources.Status != nil
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				s.byResource[gvr] = v.Schema.OpenAPIV3Schema
				s.byKind[gvk] = v.Schema.OpenAPIV3Schema
			}
		}
	}
	return s
}

// SchemasFromCRDDir reads every CustomResourceDefinition (apiextensions.k8s.io/v1) in
// the .yaml, .yml and .json files under dir, recursively; other documents are skipped.
// It fails when a file cannot be read or parsed, or when dir holds no CRD at all.
func SchemasFromCRDDir(dir string) (*CRDSchemas, error) {
	crds, err := ReadCRDDir(dir)
	if err != nil {
		return nil, err
	}
	return SchemasFromCRDs(crds...), nil
}

// ReadCRDDir returns the CRDs that SchemasFromCRDDir reads (kubecel dev installs them).
func ReadCRDDir(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		if d.IsDir() {
			return nil
		}
		found, err := readCRDs(p)
		if err != nil {
			return err
		}
		crds = append(crds, found...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition (apiextensions.k8s.io/v1) found under %s", dir)
	}
	return crds, nil
}

// readCRDs returns the CRDs in one (possibly multi-document) file.
func readCRDs(file string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return crds, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		if head.Kind != "CustomResourceDefinition" || head.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, crd); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		crds = append(crds, crd)
	}
}

// ResourceSchema implements SchemaSource.
func (s *CRDSchemas) ResourceSchema(gvr schema.GroupVersionResource) *apiextensionsv1.JSONSchemaProps {
	return s.byResource[gvr]
}

// KindSchema implements SchemaSource.
func (s *CRDSchemas) KindSchema(gvk schema.GroupVersionKind) *apiextensionsv1.JSONSchemaProps {
	return s.byKind[gvk]
}

// ResourceFor returns the resource that serves a kind, if one of the CRDs defines it.
func (s *CRDSchemas) ResourceFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool) {
	gvr, ok := s.resources[gvk]
	return gvr, ok
}

// Namespaced implements ScopeSource: whether a CRD's kind is namespaced.
func (s *CRDSchemas) Namespaced(gk schema.GroupKind) (namespaced, known bool) {
	namespaced, known = s.kindScopes[gk]
	return namespaced, known
}

// ResourceNamespaced implements ScopeSource: whether a CRD's resource is namespaced.
func (s *CRDSchemas) ResourceNamespaced(gr schema.GroupResource) (namespaced, known bool) {
	namespaced, known = s.resourceScopes[gr]
	return namespaced, known
}

// hasStatusSubresource implements statusSubresources: whether a version of a CRD has the
// status subresource.
func (s *CRDSchemas) hasStatusSubresource(gvr schema.GroupVersionResource) (has, known bool) {
	has, known = s.status[gvr]
	return has, known
}

// pluralOf returns the plural resource of a CRD whose singular name or lowercase kind is
// gr's resource, or "".
func (s *CRDSchemas) pluralOf(gr schema.GroupResource) string {
	return s.names[schema.GroupResource{Group: gr.Group, Resource: strings.ToLower(gr.Resource)}]
}

var (
	_ ScopeSource        = (*CRDSchemas)(nil)
	_ statusSubresources = (*CRDSchemas)(nil)
)
