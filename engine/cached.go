package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// cachedObject is an object as kubecel's informer caches hold it: the metadata that event
// handlers, indexes and pruning read, typed, and the whole object (trimmed by trimObject)
// as compressed JSON text, decoded when a reconcile needs it.
//
// Decoded objects (unstructured maps of maps) take five to seven times the size of their
// JSON: measured on the benchmark's children, a ConfigMap of 909 bytes of JSON held
// 5.3 KB decoded, a Deployment of 1.8 KB held 14 KB. Informer caches are most of a
// controller's memory, so they keep the text and each reconcile decodes the few objects
// it reads (tens of microseconds; see BenchmarkCachedObject). The text is compressed with
// S2 against a dictionary per kind (see kindDicts): objects of one kind share most of
// their keys and many values, so a 1.8 KB Deployment takes about 110 bytes.
//
// The typed metadata holds only name, namespace, UID, resource version and deletion
// timestamp, and kubecel's own labels and parent annotation as plain fields: maps cost
// a few hundred bytes each. GetLabels and GetAnnotations return just those (in a new
// map); everything else is read from the decoded object. A cachedObject is never modified
// once made.
type cachedObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	managedBy, rule, child, parentUID string // kubecel's labels (see labels.go)
	parent                            string // the AnnotationParent annotation

	dict *s2.Dict // what raw is compressed against
	raw  []byte   // the object's JSON, compressed
}

// kubeObject is what keyOf and deleteChild need: metadata and a kind. Both
// *unstructured.Unstructured and *cachedObject are one.
type kubeObject interface {
	metav1.Object
	runtime.Object
}

// newCachedObject makes the cached form of u (which it does not keep).
func newCachedObject(u *unstructured.Unstructured) (*cachedObject, error) {
	text, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", keyOf(u), err)
	}
	dict := dicts.forKind(u.GetAPIVersion()+"/"+u.GetKind(), text)
	// Encode returns a slice of a buffer sized for the worst case: keep only the bytes used.
	o := &cachedObject{dict: dict, raw: bytes.Clone(dict.Encode(nil, text))}
	o.APIVersion, o.Kind = intern(u.GetAPIVersion()), intern(u.GetKind())
	o.Name, o.Namespace, o.UID = u.GetName(), u.GetNamespace(), u.GetUID()
	o.ResourceVersion, o.DeletionTimestamp = u.GetResourceVersion(), u.GetDeletionTimestamp()
	labels := u.GetLabels()
	o.managedBy, o.rule, o.child = intern(labels[LabelManagedBy]), intern(labels[LabelRule]), intern(labels[LabelChild])
	o.parentUID = labels[LabelParentUID]
	o.parent = u.GetAnnotations()[AnnotationParent]
	return o, nil
}

// GetLabels returns kubecel's labels of the object (not the others).
func (o *cachedObject) GetLabels() map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{LabelManagedBy: o.managedBy, LabelRule: o.rule, LabelChild: o.child, LabelParentUID: o.parentUID} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// GetAnnotations returns kubecel's parent annotation of the object (not the others).
func (o *cachedObject) GetAnnotations() map[string]string {
	if o.parent == "" {
		return map[string]string{}
	}
	return map[string]string{AnnotationParent: o.parent}
}

// decode returns the object as a new unstructured value the caller may change.
func (o *cachedObject) decode() (*unstructured.Unstructured, error) {
	text, err := o.dict.Decode(nil, o.raw)
	if err != nil {
		return nil, fmt.Errorf("decompress cached %s: %w", keyOf(o), err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(text); err != nil {
		return nil, fmt.Errorf("decode cached %s: %w", keyOf(o), err)
	}
	return u, nil
}

// DeepCopyObject copies the metadata; the JSON text is shared, as nothing changes it.
func (o *cachedObject) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// dicts holds the compression dictionary of each kind.
var dicts = &kindDicts{m: map[string]*s2.Dict{}}

// kindDicts makes one S2 dictionary per kind (API version and kind), from the JSON of the
// first object of that kind the process caches: the later ones repeat most of it. A
// dictionary is never replaced, since cached objects refer to the one they were
// compressed against. Each takes about 35 KB.
type kindDicts struct {
	mu sync.Mutex
	m  map[string]*s2.Dict
}

func (k *kindDicts) forKind(kind string, sample []byte) *s2.Dict {
	k.mu.Lock()
	defer k.mu.Unlock()
	if d, ok := k.m[kind]; ok {
		return d
	}
	// The dictionary keeps its data: copy, so that the caller's buffer is not pinned.
	d := s2.MakeDict(bytes.Clone(sample), nil)
	if d == nil { // shorter than s2.MinDictSize: not a real object, keep it uncompressed-ish
		d = s2.MakeDict(bytes.Repeat([]byte{' '}, s2.MinDictSize), nil)
	}
	k.m[kind] = d
	return d
}

// strs holds one copy of strings that repeat across cached objects: kinds, API versions,
// label keys and the values of kubecel's own labels (rule and child names).
var strs = newInternTable(10000)

// internTable shares equal strings. Entries are never removed, so the table is capped:
// past max distinct strings (far more than the kinds, rules and label keys a cluster has)
// new ones are simply not shared.
type internTable struct {
	m     sync.Map
	count atomic.Int64
	max   int64
}

func newInternTable(max int64) *internTable { return &internTable{max: max} }

func (t *internTable) intern(s string) string {
	if v, ok := t.m.Load(s); ok {
		return v.(string)
	}
	if t.count.Load() >= t.max {
		return s
	}
	v, loaded := t.m.LoadOrStore(s, s)
	if !loaded {
		t.count.Add(1)
	}
	return v.(string)
}

func intern(s string) string { return strs.intern(s) }
