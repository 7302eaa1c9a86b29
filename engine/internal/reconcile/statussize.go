package reconcile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/internal/ujson"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// The API server refuses to store an object larger than etcd takes in one request
// (--max-request-bytes, 1.5 MiB by default; a little more and the request does not even
// reach etcd). A status the rules compute can make its parent that large: a status field
// that copies a big value of the spec doubles it. Such a write fails every time it is
// tried, so the parent would show nothing at all. kubecel writes the status without its
// largest fields instead, with a Synced condition that says so (StatusTooLarge).

// smallStatus is the size of JSON under which a status is not looked at more closely:
// with it, only a parent already near the limit is too large, and the server's refusal
// handles that case (refusedStatus). Measuring every parent would cost a JSON encoding of
// it at every reconcile.
const smallStatus = 64 * 1024

// objectBudget is the largest parent, in bytes of JSON, whose status kubecel writes as
// the rules compute it: etcd's default request limit less room for the request's own
// overhead and the server's additions (managedFields).
const objectBudget = 1536*1024 - 128*1024

// fitStatus takes from want, the status for parent, the rule's own fields (all but the
// conditions and observedGeneration), largest first, until the parent with that status
// is at most budget bytes of JSON, and says so in want's Synced condition. It returns the
// fields it left out, as "status.name (N bytes)", and none when the status fits.
func fitStatus(r *rules.Rule, want map[string]any, parent *unstructured.Unstructured, budget int) []string {
	if jsonSize(want) < smallStatus {
		return nil
	}
	full := objectSize(parent, want)
	if full <= budget {
		return nil
	}
	left := dropLargest(want, full, budget)
	markTooLarge(r, want, fmt.Sprintf("the status the rule computes makes the object larger than the API server stores (%d bytes of JSON, at most %d): left out %s; make these fields smaller",
		full, budget, strings.Join(left, ", ")))
	return left
}

// refusedStatus takes the rule's fields out of want, largest first, until the parent
// with that status is at most a few KiB larger than without one, after the API server
// refused want as too large (err), and says so in want's Synced condition.
func refusedStatus(r *rules.Rule, want map[string]any, parent *unstructured.Unstructured, err error) []string {
	left := dropLargest(want, objectSize(parent, want), objectSize(parent, nil)+4096)
	markTooLarge(r, want, fmt.Sprintf("the API server refused the status the rule computes as too large (%s): left out %s; make these fields smaller",
		truncate(err.Error(), 200), strings.Join(left, ", ")))
	return left
}

// dropLargest deletes the rule's fields of want (all but the conditions and
// observedGeneration), largest first, until the object's size, size with all of them,
// is at most budget, and returns them as "status.name (N bytes)".
func dropLargest(want map[string]any, size, budget int) []string {
	type field struct {
		name string
		size int
	}
	var fields []field
	for name, v := range want {
		if name != "conditions" && name != "observedGeneration" {
			fields = append(fields, field{name, jsonSize(v)})
		}
	}
	slices.SortFunc(fields, func(a, b field) int { return cmp.Or(b.size-a.size, strings.Compare(a.name, b.name)) })
	var left []string
	for _, f := range fields {
		if size <= budget {
			break
		}
		delete(want, f.name)
		size -= f.size
		left = append(left, fmt.Sprintf("status.%s (%d bytes)", f.name, f.size))
	}
	return left
}

// markTooLarge sets want's Synced condition (the rule's) to False, StatusTooLarge.
func markTooLarge(r *rules.Rule, want map[string]any, msg string) {
	conds, _ := want["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == r.SyncedCondition {
			m["status"], m["reason"], m["message"] = "False", contract.ReasonStatusTooLarge, truncate(msg, 1024)
		}
	}
}

// objectSize is the size in bytes of parent's JSON with status in place of its own.
func objectSize(parent *unstructured.Unstructured, status map[string]any) int {
	obj := make(map[string]any, len(parent.Object))
	for k, v := range parent.Object {
		if k != "status" {
			obj[k] = v
		}
	}
	if status != nil {
		obj["status"] = status
	}
	return jsonSize(obj)
}

func jsonSize(v any) int {
	data, err := ujson.Marshal(v)
	if err != nil {
		return 0
	}
	return len(data)
}

// tooLarge reports whether a write failed because the object is too large to store:
// the API server's 413, etcd's "request is too large", or the gRPC limit between the
// API server and etcd, which the API server passes on as an internal error.
func tooLarge(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsRequestEntityTooLargeError(err) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "request is too large") || strings.Contains(msg, "trying to send message larger than max")
}
