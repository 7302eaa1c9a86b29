package informers

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/rules/contract"
)

// Under sharding a replica reconciles only the parents of the buckets it serves, but a
// parent carries no bucket label (contract.Bucket hashes its namespace and name), so the
// API server cannot leave the others out of the replica's parent informers, and labelling
// every parent would cost a write each. The informer's transform decides instead
// (Key.Whole): a parent of a bucket the replica serves is cached whole; any other is
// cached as a stub, its identity alone (kind, namespace, name, UID, resourceVersion,
// deletion timestamp, the orphan sighting), enough for the informer's keys and the
// events a parent handler reads (queue the key, tell of a deleted parent), never enough
// to reconcile it: a stub does not decode (ErrStub). A parent's bucket never changes, so
// an object is a stub in every version or in none; when the buckets change, the watch
// package acquires informers for the new ones and swaps them in once they have synced.

// NoBuckets is the Key.Whole of an informer that caches every object as a stub: a
// replica that serves no bucket yet.
const NoBuckets = "none"

// ErrStub is the error of decoding a stub: the cache holds only the identity of an
// object whose bucket the replica does not serve.
var ErrStub = errors.New("only a stub is cached: this replica does not serve its bucket")

// wholeFilter reads a Key.Whole: nil when every object is cached whole (""), otherwise
// whether the object with this namespace and name is. whole lists buckets as
// contract.BucketLabel values separated by commas, or is NoBuckets.
func wholeFilter(whole string) (func(namespace, name string) bool, error) {
	if whole == "" {
		return nil, nil
	}
	var served [contract.Buckets]bool
	if whole != NoBuckets {
		for v := range strings.SplitSeq(whole, ",") {
			b, err := strconv.Atoi(v)
			if err != nil || b < 0 || b >= contract.Buckets || contract.BucketLabel(b) != v {
				return nil, fmt.Errorf("buckets cached whole %q: %q is not a bucket (0 to %d)", whole, v, contract.Buckets-1)
			}
			served[b] = true
		}
	}
	return func(namespace, name string) bool { return served[contract.Bucket(namespace, name)] }, nil
}

// newStub makes the stub of u: its identity without its content.
func newStub(u *unstructured.Unstructured) *Object {
	o := &Object{stub: true}
	o.APIVersion, o.Kind = intern(u.GetAPIVersion()), intern(u.GetKind())
	o.namespace, o.deletionTimestamp = intern(u.GetNamespace()), u.GetDeletionTimestamp()
	o.pack(nil, u.GetName(), string(u.GetUID()), u.GetResourceVersion(), "", "")
	return o
}

// Stub reports whether the cache holds only the object's identity (ErrStub).
func (o *Object) Stub() bool { return o.stub }
