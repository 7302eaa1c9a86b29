package reconcile

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
				_, _ = w.remembered("ns/c", nil, func() (*unstructured.Unstructured, error) {
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

// TestRememberedParentChangedElsewhere: a write to a parent that changes nothing is
// answered with the parent as it is, at the resource version of whoever changed it last.
// When that change came after the reconcile's read (a deletion, a new generation, a
// label), its event, held back while the write was in flight, is not the write's echo:
// it reaches the handler, and the response is not remembered. A response that shows the
// parent as read (but the write's own annotation) is the echo.
func TestRememberedParentChangedElsewhere(t *testing.T) {
	read := &unstructured.Unstructured{Object: map[string]any{}}
	read.SetUID("p1")
	read.SetResourceVersion("5")
	read.SetGeneration(1)
	read.SetLabels(map[string]string{"team": "a"})
	read.SetAnnotations(map[string]string{"note": "x"})
	const mine = "revision.kubecel.dev/r"
	cases := []struct {
		name       string
		change     func(u *unstructured.Unstructured)
		wantReplay bool
	}{
		{name: "deleted since the read", change: func(u *unstructured.Unstructured) {
			now := metav1.NewTime(time.Now())
			u.SetDeletionTimestamp(&now)
			u.SetGeneration(2)
		}, wantReplay: true},
		{name: "new generation", change: func(u *unstructured.Unstructured) { u.SetGeneration(2) }, wantReplay: true},
		{name: "label changed", change: func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "b"}) }, wantReplay: true},
		{name: "annotation added", change: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"note": "x", "other": "y"})
		}, wantReplay: true},
		{name: "only the write's annotation", change: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"note": "x", mine: "abc"})
		}},
		{name: "only kubectl's last applied configuration", change: func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"note": "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := writer{written: informers.NewWritten(trustLabels)}
			got := read.DeepCopy()
			got.SetResourceVersion("6")
			tc.change(got)
			replayed := 0
			_, err := w.remembered("status/r/p1", seenParent(read, mine), func() (*unstructured.Unstructured, error) {
				// The event of the response's version arrives while the write is in flight.
				if !w.written.Echo("status/r/p1", got, func() { replayed++ }) {
					t.Error("an event during the write was not held back")
				}
				return got.DeepCopy(), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.wantReplay]; replayed != want {
				t.Errorf("the held event was replayed %d times, want %d", replayed, want)
			}
		})
	}
}
