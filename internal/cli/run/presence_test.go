package run

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubecel/kubecel/internal/shard"
)

// TestRefuseShardedPeers decides whether a leader may start beside the ring's Leases: a
// live member refuses it, a stale one or none does not, and RBAC that cannot list Leases
// (an earlier release's Role) lets it run rather than stop the controller.
func TestRefuseShardedPeers(t *testing.T) {
	member := func(name string, renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kubecel-system", Labels: map[string]string{shard.LabelRing: "kubecel"}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(name + "-pod"),
				LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime:            &metav1.MicroTime{Time: renewed},
			},
		}
	}
	tests := []struct {
		name      string
		leases    []runtime.Object
		forbidden bool
		wantErr   string // "" for no error
	}{
		{name: "no ring", wantErr: ""},
		{name: "a live member", leases: []runtime.Object{member("kubecel-a1", time.Now())}, wantErr: `already runs sharded (ring "kubecel" in kubecel-system: kubecel-a1-pod)`},
		{name: "a stale member", leases: []runtime.Object{member("kubecel-a1", time.Now().Add(-time.Hour))}, wantErr: ""},
		{name: "list forbidden", forbidden: true, wantErr: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := fake.NewClientset(tt.leases...)
			if tt.forbidden {
				kube.PrependReactor("list", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", nil)
				})
			}
			var ring ShardOptions
			ring.Options.Ring, ring.Options.Namespace = "kubecel", "kubecel-system"
			err := refuseShardedPeers(t.Context(), kube, "kubecel", ring)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refuseShardedPeers: %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("refuseShardedPeers: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
