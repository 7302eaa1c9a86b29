package dynclient

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// request is what a test compares of an HTTP request.
type request struct {
	Method, URL, ContentType, Accept, Body string
}

// TestApplySendsClientGosRequest: Apply and ApplyStatus, namespaced or not, send the
// request client-go's dynamic client sends, byte for byte, and return what it returns.
func TestApplySendsClientGosRequest(t *testing.T) {
	var mu sync.Mutex
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, request{r.Method, r.URL.String(), r.Header.Get("Content-Type"), r.Header.Get("Accept"), string(body)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body) // the applied object back, as a server would answer
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	plain, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	short, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "n", "labels": map[string]any{"a": "<b>"}},
		"spec":     map[string]any{"size": int64(3), "ratio": 0.5, "tags": []any{"x", nil, true}},
	}}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	core := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	opts := metav1.ApplyOptions{FieldManager: "kubecel", Force: true}
	if _, ok := short.Resource(widgets).Namespace("n").(namespaced); !ok {
		t.Fatal("the client's namespaced resources do not apply with ujson")
	}
	if _, ok := short.Resource(widgets).(resource); !ok {
		t.Fatal("the client's resources do not apply with ujson")
	}
	for _, tc := range []struct {
		name  string
		apply func(c dynamic.Interface) (*unstructured.Unstructured, error)
	}{
		{"namespaced", func(c dynamic.Interface) (*unstructured.Unstructured, error) {
			return c.Resource(widgets).Namespace("n").Apply(t.Context(), "w", obj, opts)
		}},
		{"status", func(c dynamic.Interface) (*unstructured.Unstructured, error) {
			return c.Resource(widgets).Namespace("n").ApplyStatus(t.Context(), "w", obj, opts)
		}},
		{"cluster-scoped", func(c dynamic.Interface) (*unstructured.Unstructured, error) {
			return c.Resource(widgets).Apply(t.Context(), "w", obj, metav1.ApplyOptions{FieldManager: "kubecel", DryRun: []string{metav1.DryRunAll}})
		}},
		{"cluster-scoped status", func(c dynamic.Interface) (*unstructured.Unstructured, error) {
			return c.Resource(widgets).ApplyStatus(t.Context(), "w", obj, opts)
		}},
		{"core group, subresource", func(c dynamic.Interface) (*unstructured.Unstructured, error) {
			return c.Resource(core).Namespace("n").Apply(t.Context(), "w", obj, opts, "scale")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			wantObj, wantErr := tc.apply(plain)
			gotObj, err := tc.apply(short)
			if err != nil || wantErr != nil {
				t.Fatalf("apply: %v; client-go's: %v", err, wantErr)
			}
			if len(got) != 2 {
				t.Fatalf("%d requests, want 2", len(got))
			}
			if diff := cmp.Diff(got[0], got[1]); diff != "" {
				t.Errorf("request differs from client-go's (-client-go +short):\n%s", diff)
			}
			if diff := cmp.Diff(wantObj.Object, gotObj.Object); diff != "" {
				t.Errorf("result differs from client-go's (-client-go +short):\n%s", diff)
			}
		})
	}

	// What client-go refuses before sending, this client refuses too.
	withFields := obj.DeepCopy()
	withFields.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "someone"}})
	got = nil
	for _, c := range []dynamic.Interface{plain, short} {
		for _, bad := range []struct {
			namespace, name string
			obj             *unstructured.Unstructured
		}{
			{"n", "", obj},         // no name
			{"n/x", "w", obj},      // a namespace that is no path segment
			{"n", "a/b", obj},      // a name that is none
			{"n", "w", withFields}, // managed fields set
		} {
			if _, err := c.Resource(widgets).Namespace(bad.namespace).Apply(t.Context(), bad.name, bad.obj, opts); err == nil {
				t.Errorf("%T: applying %q in %q did not fail", c, bad.name, bad.namespace)
			}
		}
	}
	if len(got) != 0 {
		t.Errorf("bad applies sent %d requests: %v", len(got), got)
	}
}
