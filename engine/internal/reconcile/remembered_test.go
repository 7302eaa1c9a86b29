package reconcile

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubecel/kubecel/engine/internal/informers"
)

// TestRememberedReplaysWhatItHeld: an event that arrives while a write is in flight is
// held back; whatever way the write ends (an error, a panic), an event that was not its
// echo reaches the handler.
func TestRememberedReplaysWhatItHeld(t *testing.T) {
	event := &unstructured.Unstructured{}
	event.SetUID("u1")
	event.SetResourceVersion("9")
	cases := []struct {
		name  string
		write func() (*unstructured.Unstructured, error)
	}{
		{name: "error", write: func() (*unstructured.Unstructured, error) { return nil, errors.New("refused") }},
		{name: "error with a response", write: func() (*unstructured.Unstructured, error) { return event, errors.New("refused") }},
		{name: "panic", write: func() (*unstructured.Unstructured, error) { panic("boom") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := writer{written: informers.NewWritten(trustLabels)}
			replayed := 0
			func() {
				defer func() { _ = recover() }()
				_, _ = w.remembered("ns/c", func() (*unstructured.Unstructured, error) {
					if !w.written.Echo("ns/c", event, func() { replayed++ }) {
						t.Error("an event during the write was not held back")
					}
					return tc.write()
				})
			}()
			if replayed != 1 {
				t.Errorf("the held event was replayed %d times, want 1", replayed)
			}
			if w.written.Echo("ns/c", event, func() {}) {
				t.Error("after the write, an event of the key is still taken for an echo")
			}
		})
	}
}
