package dynclient

import (
	"bytes"
	"io"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
)

const benchObject = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web-0042","namespace":"bench","uid":"0b9c6d9e-8f5e-4d55-a0c2-3f2b9e7d1a10",` +
	`"resourceVersion":"123456","creationTimestamp":"2026-11-28T20:00:00Z","labels":{"app.kubernetes.io/managed-by":"kubecel","kubecel.dev/rule":"webapp"},` +
	`"managedFields":[{"manager":"kubecel","operation":"Apply","apiVersion":"v1","time":"2026-11-28T20:00:00Z","fieldsType":"FieldsV1",` +
	`"fieldsV1":{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{},"f:kubecel.dev/rule":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:targetPort":{}}},"f:selector":{}}}}]},` +
	`"spec":{"clusterIP":"10.0.0.42","clusterIPs":["10.0.0.42"],"ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","ports":[{"port":80,"protocol":"TCP","targetPort":8080}],` +
	`"selector":{"app":"web-0042"},"sessionAffinity":"None","type":"ClusterIP","internalTrafficPolicy":"Cluster"},"status":{"loadBalancer":{}}}`

// BenchmarkDecode: a response decoded into an Unstructured, and a watch event (its frame,
// then its object, as client-go's watch decoder takes them), by client-go's serializers
// and by the wrapped ones.
func BenchmarkDecode(b *testing.B) {
	plain, short := clientGos(b)
	frame := []byte(`{"type":"MODIFIED","object":` + benchObject + `}`)
	for _, bc := range []struct {
		name string
		s    [2]runtime.Serializer
	}{{"client-go", plain}, {"short", short}} {
		b.Run("response/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := bc.s[0].Decode([]byte(benchObject), nil, &unstructured.Unstructured{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("watch-event/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var event metav1.WatchEvent
				if _, _, err := bc.s[1].Decode(frame, nil, &event); err != nil {
					b.Fatal(err)
				}
				if _, err := runtime.Decode(bc.s[0], event.Object.Raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFrames: cutting a watch stream of 100 events into frames, by client-go's JSON
// framer and by frames.
func BenchmarkFrames(b *testing.B) {
	stream := bytes.Repeat([]byte(`{"type":"MODIFIED","object":`+benchObject+"}\n"), 100)
	for _, bc := range []struct {
		name string
		f    runtime.Framer
	}{{"client-go", json.Framer}, {"frames", framer{json.Framer}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stream)))
			buf := make([]byte, 4096)
			for b.Loop() {
				r := bc.f.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
				for n := 0; n < 100; {
					_, err := r.Read(buf)
					if err == nil {
						n++
					} else if err != io.ErrShortBuffer {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
