package ujson

import (
	"encoding/json"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// deployment is a Deployment as the API server returns it, decoded as Kubernetes decodes
// it: the shape of what kubecel's caches encode most.
const deployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web-0042","namespace":"bench",
"uid":"0b9c6d9e-8f5e-4d55-a0c2-3f2b9e7d1a10","resourceVersion":"123456","generation":1,
"creationTimestamp":"2026-11-28T20:00:00Z","labels":{"app.kubernetes.io/managed-by":"kubecel","kubecel.dev/rule":"webapp","kubecel.dev/child":"deployment"},
"annotations":{"kubecel.dev/parent":"WebApp.bench.kubecel.dev bench/web-0042","kubecel.dev/applied-hash":"3q2-7wEjRWeJq83vASNFZw"}},
"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web-0042"}},"template":{"metadata":{"labels":{"app":"web-0042"}},
"spec":{"containers":[{"name":"app","image":"nginx:1.27","ports":[{"containerPort":8080,"protocol":"TCP"}],
"resources":{"requests":{"cpu":"100m","memory":"64Mi"}},"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}],
"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","schedulerName":"default-scheduler"}},
"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":"25%"}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600},
"status":{"observedGeneration":1,"replicas":2,"readyReplicas":2,"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable"}]}}`

// BenchmarkMarshal: Marshal against encoding/json on a decoded Deployment.
func BenchmarkMarshal(b *testing.B) {
	var obj map[string]any
	if err := utiljson.Unmarshal([]byte(deployment), &obj); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name    string
		marshal func(any) ([]byte, error)
	}{
		{"encoding-json", json.Marshal},
		{"ujson", Marshal},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.marshal(obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
