package clikit

import (
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ObjectName reads an object's namespace and name.
func ObjectName(obj map[string]any) (namespace, name string) {
	md, _ := obj["metadata"].(map[string]any)
	namespace, _ = md["namespace"].(string)
	name, _ = md["name"].(string)
	return namespace, name
}

// Namespaced names an object as namespace/name, or name when it has no namespace.
func Namespaced(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// Dash is s, or - when s is empty (an empty column of a table).
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Age is kubectl's AGE of an object created at created (RFC 3339); - when unknown.
func Age(created string, now time.Time) string {
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t))
}
