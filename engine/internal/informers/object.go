package informers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/klauspost/compress/s2"

	"github.com/kubecel/kubecel/internal/ujson"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Object is an object as kubecel's informer caches hold it: the metadata that event
// handlers, indexes and pruning read, typed, and the whole object (trimmed by Trim)
// as compressed JSON text, decoded when a reconcile needs it.
//
// Decoded objects (unstructured maps of maps) take five to seven times the size of their
// JSON: measured on the benchmark's children, a ConfigMap of 909 bytes of JSON held
// 5.3 KB decoded, a Deployment of 1.8 KB held 14 KB. Informer caches are most of a
// controller's memory, so they keep the text and each reconcile decodes the few objects
// it reads (tens of microseconds; see BenchmarkCachedObject). The text is compressed with
// S2 against a dictionary per kind (see kindDicts): objects of one kind share most of
// their keys and many values, so a 1.8 KB Deployment takes about 110 bytes. The first
// objects of a kind are compressed alone: a kind gets its dictionary from its
// dictAfter-th object on.
//
// The typed metadata is only name, namespace, UID, resource version, deletion timestamp,
// and kubecel's own labels and parent annotation, as plain fields: a metav1.ObjectMeta
// takes 264 bytes even when empty, and each map a few hundred more. For client-go's
// indexer (meta.Accessor) GetObjectMeta builds an ObjectMeta with just those; everything
// else is read from the decoded object. An Object is never modified once made.
type Object struct {
	metav1.TypeMeta

	name, namespace, resourceVersion string
	uid                              types.UID
	deletionTimestamp                *metav1.Time
	// orphan is set on a terminating object seen with the orphan finalizer, in this
	// version or an earlier one (orphans.go).
	orphan bool
	// stub is set on an object cached without its content (stubs.go): raw is empty.
	stub bool
	// plain is set when raw is the JSON as it is, not compressed (newPlainObject).
	plain bool

	// kubecel's labels (contract.LabelRule, LabelChild, LabelParentUID) and annotations
	// (contract.AnnotationParent, AnnotationOrigin), only on an object whose proof the
	// Prover accepted: on any other object they are empty, whatever it carries.
	rule, child, parentUID string
	parent, origin         string

	dict *s2.Dict // what raw is compressed against; nil: compressed alone
	raw  []byte   // the object's JSON, compressed unless plain
}

// named is what nameOf needs. Both *unstructured.Unstructured and *Object are one.
type named interface {
	GetObjectKind() schema.ObjectKind
	GetNamespace() string
	GetName() string
}

// nameOf names obj in errors: "Kind.group namespace/name".
func nameOf(obj named) string {
	return rules.ObjectName(obj.GetObjectKind().GroupVersionKind().GroupKind(), obj.GetNamespace(), obj.GetName())
}

// Prover reports whether an object carrying kubecel's labels is one of this
// installation's children, as its proof says (rules.Identity.Proves). Labels alone are
// no proof: anyone who can write an object can write them.
type Prover func(u *unstructured.Unstructured) bool

// NewObject makes the cached form of u (which it does not keep). kubecel's labels and
// annotations are kept only when prove accepts u (nil accepts nothing).
func NewObject(u *unstructured.Unstructured, prove Prover) (*Object, error) {
	return newObject(u, prove, true)
}

// newPlainObject is NewObject without the compression, for the responses Written holds
// until their watch event comes, most often a few milliseconds later and unread:
// compressing them took about 3% of the controller's CPU while it converged.
func newPlainObject(u *unstructured.Unstructured, prove Prover) (*Object, error) {
	return newObject(u, prove, false)
}

func newObject(u *unstructured.Unstructured, prove Prover, compress bool) (*Object, error) {
	text, err := ujson.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", nameOf(u), err)
	}
	o := &Object{plain: !compress}
	if compress {
		o.dict = dicts.forKind(u.GetAPIVersion()+"/"+u.GetKind(), func() []byte { return dictSample(u, text) })
		text = encode(o.dict, text)
	}
	o.APIVersion, o.Kind = intern(u.GetAPIVersion()), intern(u.GetKind())
	o.namespace, o.deletionTimestamp = intern(u.GetNamespace()), u.GetDeletionTimestamp()
	var parentUID, parent string
	if labels := u.GetLabels(); labels[contract.LabelManagedBy] == contract.ManagedByValue && prove != nil && prove(u) {
		ann := u.GetAnnotations()
		o.rule, o.child, o.origin = intern(labels[contract.LabelRule]), intern(labels[contract.LabelChild]), intern(ann[contract.AnnotationOrigin])
		parentUID, parent = labels[contract.LabelParentUID], ann[contract.AnnotationParent]
	}
	o.pack(text, u.GetName(), string(u.GetUID()), u.GetResourceVersion(), parentUID, parent)
	return o, nil
}

// pack copies the compressed text and the object's own strings (those not interned)
// into one allocation, which raw and the string fields then point into. A cached
// object is so two allocations (this and the Object) instead of seven: fewer small
// long-lived allocations among the garbage of the decodes around them, which would
// keep more of the heap's pages resident. Nothing writes to the buffer after this.
func (o *Object) pack(compressed []byte, name, uid, resourceVersion, parentUID, parent string) {
	strs := [...]string{name, uid, resourceVersion, parentUID, parent}
	n := len(compressed)
	for _, s := range strs {
		n += len(s)
	}
	buf := make([]byte, 0, n)
	buf = append(buf, compressed...)
	o.raw = buf[:len(buf):len(buf)]
	var view [len(strs)]string
	for i, s := range strs {
		start := len(buf)
		buf = append(buf, s...)
		if len(s) > 0 {
			view[i] = unsafe.String(&buf[start], len(s))
		}
	}
	o.name, o.uid, o.resourceVersion, o.parentUID, o.parent = view[0], types.UID(view[1]), view[2], view[3], view[4]
}

func (o *Object) GetName() string                    { return o.name }
func (o *Object) GetNamespace() string               { return o.namespace }
func (o *Object) GetUID() types.UID                  { return o.uid }
func (o *Object) GetResourceVersion() string         { return o.resourceVersion }
func (o *Object) GetDeletionTimestamp() *metav1.Time { return o.deletionTimestamp }

// DeletedWithOrphan reports whether the object is being deleted, or was deleted, with
// the orphan propagation policy: its informer saw it terminating with the orphan
// finalizer, which the garbage collector may have removed since.
func (o *Object) DeletedWithOrphan() bool { return o.orphan }

// Rule is the value of a proven child's contract.LabelRule label ("" on any other object).
func (o *Object) Rule() string { return o.rule }

// Origin is the value of a proven child's contract.AnnotationOrigin annotation.
func (o *Object) Origin() string { return o.origin }

// Child is the value of a proven child's contract.LabelChild label.
func (o *Object) Child() string { return o.child }

// ParentUID is the value of a proven child's contract.LabelParentUID label.
func (o *Object) ParentUID() string { return o.parentUID }

// Parent is the value of a proven child's contract.AnnotationParent annotation.
func (o *Object) Parent() string { return o.parent }

// GetObjectMeta makes the object's metadata for client-go (meta.Accessor, which the
// informer's key function uses): the typed fields, kubecel's labels and its parent
// annotation.
func (o *Object) GetObjectMeta() metav1.Object {
	m := &metav1.ObjectMeta{Name: o.name, Namespace: o.namespace, UID: o.uid, ResourceVersion: o.resourceVersion,
		DeletionTimestamp: o.deletionTimestamp.DeepCopy()}
	for k, v := range map[string]string{contract.LabelRule: o.rule, contract.LabelChild: o.child, contract.LabelParentUID: o.parentUID} {
		if v != "" {
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels[k] = v
		}
	}
	if o.parent != "" {
		m.Annotations = map[string]string{contract.AnnotationParent: o.parent}
	}
	return m
}

// Decode returns the object as a new unstructured value the caller may change; a stub
// returns an error that wraps ErrStub.
func (o *Object) Decode() (*unstructured.Unstructured, error) {
	if o.stub {
		return nil, fmt.Errorf("decode cached %s: %w", nameOf(o), ErrStub)
	}
	text, err := o.raw, error(nil)
	if !o.plain {
		text, err = decode(o.dict, o.raw)
	}
	if err != nil {
		return nil, fmt.Errorf("decompress cached %s: %w", nameOf(o), err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(text); err != nil {
		return nil, fmt.Errorf("decode cached %s: %w", nameOf(o), err)
	}
	return u, nil
}

// Identity is the object reduced to its API version, kind, namespace and name.
func (o *Object) Identity() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(o.APIVersion)
	u.SetKind(o.Kind)
	u.SetNamespace(o.namespace)
	u.SetName(o.name)
	return u
}

// DeepCopyObject copies the metadata; the JSON text is shared, as nothing changes it.
func (o *Object) DeepCopyObject() runtime.Object {
	c := *o
	c.deletionTimestamp = o.deletionTimestamp.DeepCopy()
	return &c
}

// encode compresses text against dict, or alone when dict is nil.
func encode(dict *s2.Dict, text []byte) []byte {
	if dict == nil {
		return s2.Encode(nil, text)
	}
	return dict.Encode(nil, text)
}

// decode reverses encode.
func decode(dict *s2.Dict, raw []byte) ([]byte, error) {
	if dict == nil {
		return s2.Decode(nil, raw)
	}
	return dict.Decode(nil, raw)
}

// dicts holds the compression dictionary of each kind.
var dicts = &kindDicts{m: map[string]*s2.Dict{}, seen: map[string]int{}}

// dictAfter is how many objects of a kind are compressed without a dictionary before
// the kind gets one. A dictionary takes about 35 KB: for the parents of a CRD that has
// a handful of objects (a platform of a thousand CRDs has many), it would cost more than
// it saves.
const dictAfter = 16

// kindDicts makes one S2 dictionary per kind (API version and kind), from the JSON of the
// dictAfter-th object of that kind the process caches: the later ones repeat most of
// it. A dictionary is never replaced, since cached objects refer to the one they were
// compressed against.
type kindDicts struct {
	mu sync.Mutex
	m  map[string]*s2.Dict
	// seen counts the objects of kinds without a dictionary yet.
	seen map[string]int
}

// forKind returns the dictionary of kind, nil while the kind has had fewer than
// dictAfter objects.
func (k *kindDicts) forKind(kind string, sample func() []byte) *s2.Dict {
	k.mu.Lock()
	defer k.mu.Unlock()
	if d, ok := k.m[kind]; ok {
		return d
	}
	if k.seen[kind]++; k.seen[kind] < dictAfter {
		return nil
	}
	delete(k.seen, kind)
	// The dictionary keeps its data: copy, so that the caller's buffer is not pinned.
	d := s2.MakeDict(bytes.Clone(sample()), nil)
	if d == nil { // shorter than s2.MinDictSize: not a real object, keep it uncompressed-ish
		d = s2.MakeDict(bytes.Repeat([]byte{' '}, s2.MinDictSize), nil)
	}
	k.m[kind] = d
	return d
}

// dictSample is what the dictionary of u's kind is made from: u's JSON (text), but for
// a Secret without its data. A dictionary lives as long as the process, and a Secret's
// values must not outlive the Secret in kubecel's memory (a rotated credential would
// stay in it); its keys and the rest of the object still make a good dictionary.
func dictSample(u *unstructured.Unstructured, text []byte) []byte {
	if u.GetAPIVersion() != "v1" || u.GetKind() != "Secret" {
		return text
	}
	shape := u.DeepCopy()
	for _, field := range []string{"data", "stringData"} {
		m, ok := shape.Object[field].(map[string]any)
		if !ok {
			delete(shape.Object, field)
			continue
		}
		for k := range m {
			m[k] = ""
		}
	}
	out, err := json.Marshal(shape.Object)
	if err != nil {
		return nil // no sample: the dictionary of a kind without one
	}
	return out
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
