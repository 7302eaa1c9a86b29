package compare

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDiffFields(t *testing.T) {
	obj := func(kind string, fields map[string]any) *unstructured.Unstructured {
		o := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{
			"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "generation": int64(2),
			"creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": []any{map[string]any{"manager": "kubecel"}},
		}}
		for k, v := range fields {
			o[k] = v
		}
		return &unstructured.Unstructured{Object: o}
	}
	tests := []struct {
		name          string
		before, after *unstructured.Unstructured
		root          string
		want          []string
	}{{
		name:   "server-maintained metadata is not a change",
		before: obj("ConfigMap", map[string]any{"data": map[string]any{"a": "1"}}),
		after: func() *unstructured.Unstructured {
			o := obj("ConfigMap", map[string]any{"data": map[string]any{"a": "1"}})
			o.SetResourceVersion("8")
			o.SetGeneration(3)
			o.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"})
			return o
		}(),
	}, {
		name:   "one field changes, one is added, one removed",
		before: obj("ConfigMap", map[string]any{"data": map[string]any{"a": "1", "gone": "x"}}),
		after:  obj("ConfigMap", map[string]any{"data": map[string]any{"a": "2", "new": "y"}}),
		want:   []string{`~ data.a: "1" -> "2"`, `- data.gone: "x"`, `+ data.new: "y"`},
	}, {
		name:  "a create lists every field, but not empty ones",
		after: obj("ConfigMap", map[string]any{"data": map[string]any{"a": "1"}, "status": map[string]any{}}),
		want:  []string{`+ apiVersion: "v1"`, `+ data.a: "1"`, `+ kind: "ConfigMap"`, `+ metadata.name: "a"`, `+ metadata.namespace: "ns"`},
	}, {
		name: "list items are matched by name, keys with dots are quoted",
		before: obj("Pod", map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"app.kubernetes.io/name": "x"}},
			"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": "nginx:1"}, map[string]any{"name": "side", "image": "busybox"},
			}}}),
		after: obj("Pod", map[string]any{"metadata": map[string]any{"name": "a", "labels": map[string]any{"app.kubernetes.io/name": "y"}},
			"spec": map[string]any{"containers": []any{
				map[string]any{"name": "side", "image": "busybox"}, map[string]any{"name": "web", "image": "nginx:2"},
			}}}),
		want: []string{`~ metadata.labels["app.kubernetes.io/name"]: "x" -> "y"`, `~ spec.containers[name=web].image: "nginx:1" -> "nginx:2"`},
	}, {
		name:   "unkeyed lists by index; integer and float forms of a number are equal",
		before: obj("X", map[string]any{"spec": map[string]any{"args": []any{"a", "b"}, "n": int64(3)}}),
		after:  obj("X", map[string]any{"spec": map[string]any{"args": []any{"a", "c", "d"}, "n": float64(3)}}),
		want:   []string{`~ spec.args[1]: "b" -> "c"`, `+ spec.args[2]: "d"`},
	}, {
		name:   "Secret values are redacted, keys are shown",
		before: obj("Secret", map[string]any{"data": map[string]any{"password": "b2xk", "same": "eA=="}}),
		after:  obj("Secret", map[string]any{"data": map[string]any{"password": "bmV3", "same": "eA==", "token": "dA=="}}),
		want:   []string{`~ data.password: "<redacted>" -> "<redacted>"`, `+ data.token: "<redacted>"`},
	}, {
		name: "status only, condition timestamps left out",
		root: "status",
		before: obj("W", map[string]any{"spec": map[string]any{"a": "1"}, "status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		}}}),
		after: obj("W", map[string]any{"spec": map[string]any{"a": "2"}, "status": map[string]any{"url": "u", "conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": "2026-02-01T00:00:00Z"},
		}}}),
		want: []string{`~ status.conditions[type=Ready].status: "False" -> "True"`, `+ status.url: "u"`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range Diff(tt.before, tt.after, tt.root) {
				got = append(got, f.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("diff (-want +got):\n%s", diff)
			}
		})
	}
}
