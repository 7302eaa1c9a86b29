package contract

import (
	"hash/fnv"
	"strconv"
)

// Buckets is how many buckets parents fall into. When several replicas share the
// parents (kubecel run --sharding), each bucket belongs to one replica at a time, and
// every child carries its parent's bucket (LabelBucket), so that a replica's child
// caches can hold only the children of its own buckets.
const Buckets = 256

// Bucket is the bucket of the parent with this namespace ("" when cluster-scoped) and
// name: FNV-1a of "namespace/name", modulo Buckets. It depends on nothing but the
// name, so a parent's bucket is known from its queue key alone, also once the parent
// is gone.
func Bucket(namespace, name string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace))
	_, _ = h.Write([]byte{'/'})
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % Buckets)
}

// BucketLabel is the value of LabelBucket for a bucket.
func BucketLabel(bucket int) string { return strconv.Itoa(bucket) }
