package rules

import (
	"fmt"
	"strings"

	"github.com/kubecel/kubecel/rules/internal/parse"
)

// objectKey identifies an object the way Observed matching does: group, kind,
// namespace (empty when the desired object sets none) and name.
type objectKey struct {
	group, kind, namespace, name string
}

func (k objectKey) String() string {
	kind := k.kind
	if k.group != "" {
		kind += "." + k.group
	}
	if k.namespace != "" {
		return fmt.Sprintf("%s %s/%s", kind, k.namespace, k.name)
	}
	return fmt.Sprintf("%s %s", kind, k.name)
}

// checkObject checks the shape of a desired object that evaluation produced and returns
// its key.
func checkObject(ch *Child, obj map[string]any) (objectKey, error) {
	key := objectKey{group: ch.GVK.Group, kind: ch.GVK.Kind}
	if obj["apiVersion"] != ch.apiVersion || obj["kind"] != ch.GVK.Kind {
		return key, fmt.Errorf("the object's apiVersion and kind must stay %s %s, got %v %v", ch.apiVersion, ch.GVK.Kind, obj["apiVersion"], obj["kind"])
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return key, fmt.Errorf("metadata must be a map with name, got %s", parse.Describe(obj["metadata"]))
	}
	name, _ := md["name"].(string)
	if name == "" {
		return key, fmt.Errorf("metadata.name must be a non-empty string, got %s", describeValue(md["name"]))
	}
	key.name = name
	if ns, set := md["namespace"]; set {
		s, isString := ns.(string)
		if !isString {
			return key, fmt.Errorf("metadata.namespace must be a string, got %s", parse.Describe(ns))
		}
		key.namespace = s
	}
	return key, nil
}

// describeValue shows a short value in a message.
func describeValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return parse.Describe(v)
}

// claim records that child id produces the object key, and fails when another child
// (or another forEach element) already does: both would fight over one object.
func (ev *evaluation) claim(key objectKey, id string) error {
	other, taken := ev.claims.find(key)
	if taken {
		if other == id {
			return fmt.Errorf("forEach produces %s more than once; make the names unique (use each or index)", key)
		}
		return fmt.Errorf("produces %s, which child %q produces too", key, other)
	}
	ev.claims.add(key, id)
	return nil
}

// claimSet maps object keys to the child that produces them. Most rules produce a
// handful of objects, which a slice searches faster than a map is built; past
// claimSlice entries it switches to a map.
type claimSet struct {
	list  []claimEntry
	index map[objectKey]string
}

type claimEntry struct {
	key objectKey
	id  string
}

const claimSlice = 32

func (s *claimSet) find(key objectKey) (string, bool) {
	if s.index != nil {
		id, ok := s.index[key]
		return id, ok
	}
	for _, e := range s.list {
		if e.key == key {
			return e.id, true
		}
	}
	return "", false
}

func (s *claimSet) add(key objectKey, id string) {
	if s.index == nil && len(s.list) < claimSlice {
		s.list = append(s.list, claimEntry{key, id})
		return
	}
	if s.index == nil {
		s.index = make(map[objectKey]string, 2*claimSlice)
		for _, e := range s.list {
			s.index[e.key] = e.id
		}
		s.list = nil
	}
	s.index[key] = id
}

// findObserved returns the observed object that matches the desired key: same group,
// kind, name and namespace. A desired object that sets no namespace is applied in the
// parent's (parentNamespace; "" for a cluster-scoped parent) or, for a cluster-scoped
// kind, in none: an object of that name in any other namespace is not it.
func findObserved(key objectKey, candidates []map[string]any, parentNamespace string) map[string]any {
	for _, c := range candidates {
		if c["kind"] != key.kind {
			continue
		}
		apiVersion, _ := c["apiVersion"].(string)
		if groupOf(apiVersion) != key.group {
			continue
		}
		md, _ := c["metadata"].(map[string]any)
		if md["name"] != key.name {
			continue
		}
		ns, _ := md["namespace"].(string)
		if key.namespace != "" && ns != key.namespace || key.namespace == "" && ns != "" && ns != parentNamespace {
			continue
		}
		return c
	}
	return nil
}

// observedName is the part of an object's key an index of observed objects looks up:
// namespaces are left to findObserved.
type observedName struct{ group, kind, name string }

// indexFrom is how many observed objects of one child make an index worth building:
// matching each of a forEach child's objects by a scan of all of them took time
// quadratic in their number (1,000 objects, a million comparisons per evaluation).
const indexFrom = 16

// observedOf returns the observed objects of child id that may match key: all of them,
// or, for a child with many, only those of key's group, kind and name.
func (ev *evaluation) observedOf(id string, key objectKey) []map[string]any {
	all := ev.observed[id]
	if len(all) < indexFrom {
		return all
	}
	idx, ok := ev.observedIndex[id]
	if !ok {
		idx = make(map[observedName][]map[string]any, len(all))
		for _, c := range all {
			kind, _ := c["kind"].(string)
			apiVersion, _ := c["apiVersion"].(string)
			md, _ := c["metadata"].(map[string]any)
			name, _ := md["name"].(string)
			n := observedName{group: groupOf(apiVersion), kind: kind, name: name}
			idx[n] = append(idx[n], c)
		}
		if ev.observedIndex == nil {
			ev.observedIndex = map[string]map[observedName][]map[string]any{}
		}
		ev.observedIndex[id] = idx
	}
	return idx[observedName{group: key.group, kind: key.kind, name: key.name}]
}

// groupOf returns the group of an apiVersion ("" for the core group).
func groupOf(apiVersion string) string {
	if i := strings.LastIndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}
