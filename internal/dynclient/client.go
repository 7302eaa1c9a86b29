// Package dynclient makes client-go dynamic clients that decode a response or a watch
// event in one pass where client-go's own decoder takes five or six, with the same
// results (below).
package dynclient

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// client-go's dynamic client reads every JSON document several times over. A response
// decoded into an Unstructured is scanned for its apiVersion and kind (two passes: a
// validity check, then the decode), then unmarshaled into the Unstructured, which
// validates and skips it (two more) before its own UnmarshalJSON decodes the map (two
// more). A watch event pays that for its object, and four passes for the frame around
// it. Decoding in one call of Kubernetes' JSON decoder (a validity check and the decode)
// gives the same map, the same integers as int64, and the same kind.
//
// The serializer here does so for the two documents kubecel reads most: an object
// decoded into an Unstructured or into nothing (a response, a watch event's object),
// and a watch event's frame. Everything else, and any document the short path cannot
// decode as the long one would (malformed JSON, a missing kind or version, a kind of
// Kubernetes' own meta API such as Status, lists), goes to client-go's serializer, so
// errors and results are its own.

// New returns a dynamic client for cfg, as dynamic.NewForConfig, whose decoder
// takes the short path and whose Apply encodes with ujson (apply.go).
func New(cfg *rest.Config) (dynamic.Interface, error) {
	config := dynamic.ConfigFor(cfg)
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	config.NegotiatedSerializer = newNegotiated(config.NegotiatedSerializer)
	// As dynamic.NewForConfigAndClient: every request of the dynamic client names its
	// whole path.
	config.GroupVersion = nil
	config.APIPath = "/if-you-see-this-search-for-the-break"
	rc, err := rest.UnversionedRESTClientForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	return client{dynamic.New(rc), rc}, nil
}

// negotiated is the dynamic client's serializer with the JSON decoders wrapped. client-go
// asks for the media types at every request, so they are wrapped once (newNegotiated).
type negotiated struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func newNegotiated(inner runtime.NegotiatedSerializer) negotiated {
	infos := slices.Clone(inner.SupportedMediaTypes())
	for i, info := range infos {
		if info.MediaType == runtime.ContentTypeJSON {
			info.Serializer = serializer{info.Serializer}
			if info.StreamSerializer != nil {
				stream := *info.StreamSerializer
				stream.Serializer = serializer{stream.Serializer}
				stream.Framer = framer{stream.Framer}
				info.StreamSerializer = &stream
			}
			infos[i] = info
		}
	}
	return negotiated{inner, infos}
}

func (n negotiated) SupportedMediaTypes() []runtime.SerializerInfo { return n.infos }

// serializer is a JSON serializer of client-go's whose Decode takes the short path when
// it can.
type serializer struct {
	runtime.Serializer
}

// watchEventKind is what client-go's serializer reports for a decoded watch event frame.
var watchEventKind = schema.GroupVersionKind{Version: "v1", Kind: "WatchEvent"}

// meta holds the kinds of Kubernetes' meta API, which client-go decodes into their own
// types (a Status, above all) rather than into an Unstructured.
var meta = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

func (s serializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if defaults == nil {
		switch into := into.(type) {
		case nil:
			if obj, gvk, ok := handed.take(data); ok {
				return obj, gvk, nil
			}
			if obj, gvk, ok := decodeNew(data); ok {
				return obj, gvk, nil
			}
		case *unstructured.Unstructured:
			if gvk, ok := decodeInto(data, into); ok {
				return into, gvk, nil
			}
		case *metav1.WatchEvent:
			if event, ok := decodeFrame(data); ok {
				*into = event
				gvk := watchEventKind
				return into, &gvk, nil
			}
			event := *into // fields the frame leaves out stay, as client-go leaves them
			if utiljson.Unmarshal(data, &event) == nil {
				*into = event
				gvk := watchEventKind
				return into, &gvk, nil
			}
		}
	}
	return s.Serializer.Decode(data, defaults, into)
}

// decodeNew decodes an object of a kind outside the meta API into a new Unstructured.
func decodeNew(data []byte) (runtime.Object, *schema.GroupVersionKind, bool) {
	m, gvk, ok := decodeMap(data)
	if !ok || gvk.Version == "" || meta.Recognizes(gvk) {
		return nil, nil, false
	}
	return &unstructured.Unstructured{Object: m}, &gvk, true
}

// decodeInto decodes an object into u, which it replaces whole as client-go does.
func decodeInto(data []byte, u *unstructured.Unstructured) (*schema.GroupVersionKind, bool) {
	m, gvk, ok := decodeMap(data)
	if !ok {
		return nil, false
	}
	u.Object = m
	return &gvk, true
}

// decodeMap decodes a JSON object with a kind, and an apiVersion that is a string if it is
// there, as client-go's serializer reads them.
func decodeMap(data []byte) (map[string]any, schema.GroupVersionKind, bool) {
	var m map[string]any
	if err := utiljson.Unmarshal(data, &m); err != nil || m == nil {
		return nil, schema.GroupVersionKind{}, false
	}
	gvk, ok := kindOf(m)
	return m, gvk, ok
}

// kindOf reads the kind of a decoded object, which must have one, and its apiVersion, a
// string if it is there.
func kindOf(m map[string]any) (schema.GroupVersionKind, bool) {
	kind, ok := m["kind"].(string)
	if !ok || kind == "" {
		return schema.GroupVersionKind{}, false
	}
	apiVersion, ok := m["apiVersion"].(string)
	if _, present := m["apiVersion"]; present && !ok {
		return schema.GroupVersionKind{}, false
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	return gv.WithKind(kind), true
}
