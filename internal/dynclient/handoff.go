package dynclient

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
)

// client-go's watch decodes an event in two steps: the frame into a metav1.WatchEvent,
// whose object stays JSON text (checked, skipped and copied on the way), and then that
// text into an object, by the decoder it was given. Both decoders are the serializer
// here, so the first step decodes the whole frame in one pass and hands the decoded
// object to the second: the event's object text is a one-byte token that names it.
// client-go's watch decodes the token right after the frame, in the same goroutine,
// for every event of a valid type, and only those get a token. The token is no JSON
// document, so a decoder that was not handed anything fails on it as on any bad text.

// handoff holds the objects decoded with their frames until their token is decoded.
type handoff struct {
	mu   sync.Mutex
	objs map[*byte]handedObject
}

type handedObject struct {
	obj map[string]any
	gvk schema.GroupVersionKind
}

// maxHanded bounds what a watch that never decodes its tokens (none does today) could
// leave behind: past it, frames are decoded the long way.
const maxHanded = 4096

var handed = &handoff{objs: map[*byte]handedObject{}}

// put keeps obj and returns its token, or false when too many wait.
func (h *handoff) put(obj map[string]any, gvk schema.GroupVersionKind) ([]byte, bool) {
	token := []byte{0}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.objs) >= maxHanded {
		return nil, false
	}
	h.objs[&token[0]] = handedObject{obj, gvk}
	return token, true
}

// take returns the object that token names, and forgets it.
func (h *handoff) take(token []byte) (runtime.Object, *schema.GroupVersionKind, bool) {
	if len(token) != 1 || token[0] != 0 {
		return nil, nil, false
	}
	h.mu.Lock()
	o, ok := h.objs[&token[0]]
	delete(h.objs, &token[0])
	h.mu.Unlock()
	if !ok {
		return nil, nil, false
	}
	return &unstructured.Unstructured{Object: o.obj}, &o.gvk, true
}

// frame is a watch event with its object decoded.
type frame struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

// decodeFrame decodes a watch event frame and hands its object on, when the event is of
// a valid type and its object one that decodeNew would take.
func decodeFrame(data []byte) (metav1.WatchEvent, bool) {
	var f frame
	if utiljson.Unmarshal(data, &f) != nil || f.Object == nil {
		return metav1.WatchEvent{}, false
	}
	switch watch.EventType(f.Type) {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
	default: // errors carry a Status, which client-go decodes into its own type
		return metav1.WatchEvent{}, false
	}
	gvk, ok := kindOf(f.Object)
	if !ok || gvk.Version == "" || meta.Recognizes(gvk) {
		return metav1.WatchEvent{}, false
	}
	token, ok := handed.put(f.Object, gvk)
	if !ok {
		return metav1.WatchEvent{}, false
	}
	return metav1.WatchEvent{Type: f.Type, Object: runtime.RawExtension{Raw: token}}, true
}
