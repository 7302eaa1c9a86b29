package crdschema

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/rules"
)

// Reader reads the cluster's CRD schemas for every rules load of a running controller.
// While no CRD changed it returns the same SchemaSource again, after listing only the
// CRDs' names and resource versions, so that a reload takes over the rules it compiled
// before (rules.Options.Previous) and does not fetch every schema again; after a change
// the new source keeps the objects of the CRDs whose spec is the same.
type Reader struct {
	client apiextensionsclient.Interface
	meta   metadata.Interface

	mu sync.Mutex
	// last is the source read last, and version the resource versions it was read at.
	last    rules.SchemaSource
	version string
	// crds are the CRD objects last is made of, by name: a new source is made of the
	// same objects where a CRD's spec did not change, so that the rules that name only
	// such kinds are taken over by a reload (rules.Options.Previous compares schema
	// objects).
	crds map[string]*apiextensionsv1.CustomResourceDefinition
}

// NewReader is a Reader of the cluster cfg points at.
func NewReader(cfg *rest.Config) (*Reader, error) {
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Reader{client: crds, meta: meta}, nil
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Schemas returns the schemas of the CRDs the cluster has now: the source returned last
// when every CRD is at the resource version it was read at, else a new one.
func (r *Reader) Schemas(ctx context.Context) (rules.SchemaSource, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil {
		list, err := r.meta.Resource(crdResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		if versionsOf(list.Items, func(o metav1.PartialObjectMetadata) metav1.ObjectMeta { return o.ObjectMeta }) == r.version {
			return r.last, nil
		}
	}
	list, err := r.client.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	crds := toPointers(list.Items)
	byName := make(map[string]*apiextensionsv1.CustomResourceDefinition, len(crds))
	for i, crd := range crds {
		if old := r.crds[crd.Name]; old != nil && old.UID == crd.UID && equality.Semantic.DeepEqual(old.Spec, crd.Spec) {
			crds[i] = old
		} else {
			keepOnlySpec(crd)
		}
		byName[crd.Name] = crds[i]
	}
	r.crds = byName
	r.last = rules.SchemasFromCRDs(crds...)
	r.version = versionsOf(list.Items, func(o apiextensionsv1.CustomResourceDefinition) metav1.ObjectMeta { return o.ObjectMeta })
	return r.last, nil
}

// keepOnlySpec drops from a CRD what the schemas are not made of and the Reader does
// not compare (its managedFields, annotations and status), which the Reader would
// otherwise keep for as long as the CRD does not change: a CRD's managedFields and
// kubectl's last-applied annotation can each be as large as its schema.
func keepOnlySpec(crd *apiextensionsv1.CustomResourceDefinition) {
	crd.ManagedFields = nil
	crd.Annotations = nil
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
}

// versionsOf hashes the names and resource versions of items, in name order.
func versionsOf[T any](items []T, meta func(T) metav1.ObjectMeta) string {
	pairs := make([]string, 0, len(items))
	for _, it := range items {
		m := meta(it)
		pairs = append(pairs, m.Name+"\x00"+m.ResourceVersion)
	}
	slices.Sort(pairs)
	sum := sha256.New()
	for _, p := range pairs {
		sum.Write([]byte(p))
		sum.Write([]byte{0})
	}
	return hex.EncodeToString(sum.Sum(nil))
}
