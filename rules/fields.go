package rules

import (
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Load refuses a field that the schema of the object's kind does not declare, as the API
// server does: server-side apply (what the controller writes with) refuses it
// (`.spec.replica: field not declared in schema`), so that a misspelt field in a
// template would fail every parent. Package kindschema decides; this file gives it the
// schema of every resource's metadata.

// objectMetaSchema is the schema of metav1.ObjectMeta, taken from the embedded built-in
// kinds (every one has it as its metadata); nil when they cannot be read.
var objectMetaSchema = sync.OnceValue(func() *apiextensionsv1.JSONSchemaProps {
	cm := builtinSource{}.KindSchema(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	if cm == nil {
		return nil
	}
	if md, ok := cm.Properties["metadata"]; ok && len(md.Properties) > 0 {
		return &md
	}
	return nil
})
