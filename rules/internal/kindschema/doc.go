// Package kindschema places a template value in the schema of the kind of the object it
// is part of, and says, as the API server would, whether the value may be there: a
// field the schema does not declare, a literal of the wrong type (`port: "80"`), an
// expression whose static type cannot fill the field. Its messages name the kind and
// the field path and, where it is only a matter of spelling or quoting, the fix.
//
// The root of an object, and an embedded resource (x-kubernetes-embedded-resource),
// always have apiVersion, kind and metadata, and metadata is the standard ObjectMeta
// whatever a CRD's schema says of it: the caller gives that schema to Object.
package kindschema
