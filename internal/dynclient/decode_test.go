package dynclient

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// clientGos returns the dynamic client's own JSON serializers, and the same wrapped:
// the object serializer, then the watch event frames'.
func clientGos(t testing.TB) (plain, short [2]runtime.Serializer) {
	t.Helper()
	inner := dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
	find := func(infos []runtime.SerializerInfo) [2]runtime.Serializer {
		for _, info := range infos {
			if info.MediaType == runtime.ContentTypeJSON {
				return [2]runtime.Serializer{info.Serializer, info.StreamSerializer.Serializer}
			}
		}
		t.Fatal("the dynamic client has no JSON serializer")
		return [2]runtime.Serializer{}
	}
	plain, short = find(inner.SupportedMediaTypes()), find(newNegotiated(inner).SupportedMediaTypes())
	for i, s := range short {
		if _, ok := s.(serializer); !ok {
			t.Fatalf("serializer %d is %T, not wrapped", i, s)
		}
	}
	return plain, short
}

// decoded is what a Decode gave, for comparing two of them.
type decoded struct {
	Obj any
	GVK *schema.GroupVersionKind
	Err string
}

func decode(s runtime.Serializer, data []byte, defaults *schema.GroupVersionKind, into func() runtime.Object) decoded {
	obj, gvk, err := s.Decode(data, defaults, into())
	d := decoded{Obj: obj, GVK: gvk}
	if err != nil {
		d.Err = err.Error()
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		d.Obj = u.Object // Unstructured has unexported fields; its content is what counts
	}
	return d
}

// TestDecodeIsClientGos: the wrapped serializers decode every document into what
// client-go's decode it into, with the same kind and the same error, whether they take the
// short path or hand the document on.
func TestDecodeIsClientGos(t *testing.T) {
	plain, short := clientGos(t)
	const configMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","resourceVersion":"12"},"data":{"k":"v"},"n":{"int":3,"big":12345678901234567890,"float":1.5,"exp":1e3}}`
	objects := []struct {
		name, data string
	}{
		{"core object", configMap},
		{"custom resource", `{"apiVersion":"example.com/v1","kind":"WebApp","metadata":{"name":"w"},"spec":{"replicas":2}}`},
		{"status", `{"apiVersion":"v1","kind":"Status","status":"Failure","message":"not found","reason":"NotFound","code":404}`},
		{"list", `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"9"},"items":[` + configMap + `]}`},
		{"no kind", `{"apiVersion":"v1","metadata":{"name":"a"}}`},
		{"no apiVersion", `{"kind":"ConfigMap","metadata":{"name":"a"}}`},
		{"kind not a string", `{"apiVersion":"v1","kind":3}`},
		{"apiVersion not a string", `{"apiVersion":["v1"],"kind":"ConfigMap"}`},
		{"bad apiVersion", `{"apiVersion":"a/b/c","kind":"ConfigMap"}`},
		{"kind in other case only", `{"apiVersion":"v1","Kind":"ConfigMap"}`},
		{"malformed", `{"apiVersion":"v1","kind":"ConfigMap",`},
		{"not an object", `["v1"]`},
		{"null", `null`},
	}
	intos := []struct {
		name string
		new  func() runtime.Object
	}{
		{"into nothing", func() runtime.Object { return nil }},
		{"into an Unstructured", func() runtime.Object { return &unstructured.Unstructured{Object: map[string]any{"stale": true}} }},
		{"into a Status", func() runtime.Object { return &metav1.Status{} }},
	}
	for _, o := range objects {
		for _, into := range intos {
			t.Run(o.name+"/"+into.name, func(t *testing.T) {
				want := decode(plain[0], []byte(o.data), nil, into.new)
				got := decode(short[0], []byte(o.data), nil, into.new)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("decode differs from client-go's (-client-go +wrapped):\n%s", diff)
				}
			})
		}
	}
	t.Run("with defaults", func(t *testing.T) {
		defaults := &schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
		data := []byte(`{"metadata":{"name":"a"}}`)
		none := func() runtime.Object { return nil }
		if diff := cmp.Diff(decode(plain[0], data, defaults, none), decode(short[0], data, defaults, none)); diff != "" {
			t.Errorf("decode with defaults differs (-client-go +wrapped):\n%s", diff)
		}
	})

}

// jsonInfo returns the JSON serializers of a negotiated serializer.
func jsonInfo(t testing.TB, n runtime.NegotiatedSerializer) runtime.SerializerInfo {
	t.Helper()
	for _, info := range n.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
			return info
		}
	}
	t.Fatal("no JSON serializer")
	return runtime.SerializerInfo{}
}

// event is what a test compares of a decoded watch event.
type event struct {
	Type watch.EventType
	Obj  any
	Err  string
}

// watchEvents decodes a watch stream as client-go's watch does (rest.Request.Watch) with
// the serializers of info, until the first error.
func watchEvents(info runtime.SerializerInfo, stream string) []event {
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(strings.NewReader(stream)))
	d := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), info.Serializer)
	var out []event
	for {
		typ, obj, err := d.Decode()
		e := event{Type: typ, Obj: obj}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			e.Obj = u.Object
		}
		if err != nil {
			e.Err = err.Error()
		}
		out = append(out, e)
		if err != nil {
			return out
		}
	}
}

// TestWatchIsClientGos: the wrapped serializers decode watch streams into the events
// client-go's decode, and leave no decoded object waiting for its token.
func TestWatchIsClientGos(t *testing.T) {
	inner := dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
	plain, short := jsonInfo(t, inner), jsonInfo(t, newNegotiated(inner))
	const configMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"12"},"data":{"k":"v"},"n":{"int":3,"float":1.5}}`
	frames := map[string]string{
		"added":          `{"type":"ADDED","object":` + configMap + `}`,
		"custom":         `{"type":"MODIFIED","object":{"apiVersion":"example.com/v1","kind":"WebApp","metadata":{"name":"w"}}}`,
		"deleted":        `{"type":"DELETED","object":` + configMap + `}`,
		"bookmark":       `{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"40","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		"error":          `{"type":"ERROR","object":{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"Expired","code":410}}`,
		"no type":        `{"object":` + configMap + `}`,
		"unknown type":   `{"type":"RENAMED","object":` + configMap + `}`,
		"null object":    `{"type":"DELETED","object":null}`,
		"object no kind": `{"type":"ADDED","object":{"apiVersion":"v1","metadata":{}}}`,
		"extra field":    `{"type":"ADDED","object":` + configMap + `,"extra":[1]}`,
		"malformed":      `{"type":"ADDED","object":{`,
	}
	var all strings.Builder
	for _, name := range []string{"added", "custom", "bookmark", "error", "deleted", "extra field"} {
		all.WriteString(frames[name] + "\n")
	}
	frames["stream of several"] = all.String()
	for name, stream := range frames {
		t.Run(name, func(t *testing.T) {
			want, got := watchEvents(plain, stream), watchEvents(short, stream)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events differ from client-go's (-client-go +wrapped):\n%s", diff)
			}
			handed.mu.Lock()
			defer handed.mu.Unlock()
			if n := len(handed.objs); n != 0 {
				t.Errorf("%d decoded objects still wait for their token", n)
			}
		})
	}
}

// TestDecodeTakesTheShortPath: the documents kubecel reads most are decoded here, not
// handed on (a wrapped serializer that always handed on would pass the test above).
func TestDecodeTakesTheShortPath(t *testing.T) {
	data := []byte(`{"apiVersion":"example.com/v1","kind":"WebApp","metadata":{"name":"w"}}`)
	if obj, _, ok := decodeNew(data); !ok || obj.(*unstructured.Unstructured).GetName() != "w" {
		t.Errorf("decodeNew(a custom resource) = %v, %v; want it decoded", obj, ok)
	}
	var u unstructured.Unstructured
	if gvk, ok := decodeInto(data, &u); !ok || gvk.Kind != "WebApp" || u.GetName() != "w" {
		t.Errorf("decodeInto(a custom resource) = %v, %v (%v); want it decoded", gvk, ok, u.Object)
	}
	if _, _, ok := decodeNew([]byte(`{"apiVersion":"v1","kind":"Status"}`)); ok {
		t.Error("decodeNew(a Status) took the short path; client-go makes a metav1.Status of it")
	}
	if e, ok := decodeFrame([]byte(`{"type":"ADDED","object":` + string(data) + `}`)); !ok || len(e.Object.Raw) != 1 {
		t.Errorf("decodeFrame(an ADDED event) = %v, %v; want its object handed on", e, ok)
	} else if obj, _, ok := handed.take(e.Object.Raw); !ok || obj.(*unstructured.Unstructured).GetName() != "w" {
		t.Errorf("the handed object is %v, %v; want the event's", obj, ok)
	}
	s := serializer{refusing{}}
	for i := range 2 {
		var into runtime.Object = &unstructured.Unstructured{}
		doc := data
		if i == 1 {
			into, doc = &metav1.WatchEvent{}, []byte(`{"type":"ADDED","object":{}}`)
		}
		if _, _, err := s.Decode(doc, nil, into); err != nil {
			t.Errorf("serializer %d handed a common document on: %v", i, err)
		}
	}
}

// refusing is a serializer that fails every decode handed to it.
type refusing struct{ runtime.Serializer }

func (refusing) Decode([]byte, *schema.GroupVersionKind, runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	return nil, nil, errRefused
}

var errRefused = runtime.NewMissingKindErr("handed on")
