package engine

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFlowName(t *testing.T) {
	tests := []struct {
		name        string
		key         queueKey
		fairnessKey string
		owner       flowOwner
		want        string
	}{
		{"a namespace", key("team-a", "p"), "", flowOwner{}, "team-a"},
		{"a tenant's namespace", key("team-a-1", "p"), "tenant", flowOwner{Tenant: "acme"}, "tenant=acme"},
		{"a namespace without the label", key("team-a-1", "p"), "tenant", flowOwner{}, "team-a-1"},
		{"a rule of a team's ConfigMap", key("shared", "p"), "", flowOwner{Origin: "configmap rules/team-a"}, "configmap rules/team-a"},
		{"the tenant before the rule's origin", key("shared", "p"), "tenant", flowOwner{Tenant: "acme", Origin: "configmap rules/team-a"}, "tenant=acme"},
		{"a tenant without a key set counts for nothing", key("team-a", "p"), "", flowOwner{Tenant: "acme"}, "team-a"},
		{"a cluster-scoped parent", key("", "x"), "tenant", flowOwner{Tenant: "acme", Origin: "configmap rules/team-a"}, fmt.Sprintf("/r/%d", clusterFlow("x"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := flowName(tt.key, tt.fairnessKey, tt.owner); got != tt.want {
				t.Errorf("flowName(%v, %q, %+v) = %q, want %q", tt.key, tt.fairnessKey, tt.owner, got, tt.want)
			}
		})
	}
}

// TestFlowsBounded: spreading the work gives a tenant no more flows. A thousand
// cluster-scoped parents of one rule are clusterFlows flows (each used), fifty namespaces
// of one tenant one flow; another rule's cluster-scoped parents have flows of their own.
func TestFlowsBounded(t *testing.T) {
	tenantOf := map[string]string{}
	for i := range 50 {
		tenantOf[fmt.Sprintf("heavy-%d", i)] = "heavy"
	}
	q := newFairQueue()
	q.fairnessKey = "tenant"
	q.owner = func(k queueKey) flowOwner { return flowOwner{Tenant: tenantOf[k.Namespace]} }
	for i := range 1000 {
		q.Push(queueKey{Rule: "heavy", Name: fmt.Sprintf("c%d", i)})
	}
	for ns := range tenantOf {
		q.Push(key(ns, "p"))
	}
	q.Push(queueKey{Rule: "light", Name: "one"})
	q.Push(key("light", "p"))
	got := map[string]int{}
	for name, f := range q.flows {
		got[name] = len(f.keys)
	}
	if len(got) != clusterFlows+3 {
		t.Errorf("flows: %v; want %d for the heavy rule's cluster-scoped parents, one for the heavy tenant, one for the light rule's, one for the light namespace", got, clusterFlows)
	}
	sum := 0
	for i := range clusterFlows {
		n := got[fmt.Sprintf("/heavy/%d", i)]
		if n == 0 {
			t.Errorf("flow /heavy/%d holds no parent: %v", i, got)
		}
		sum += n
	}
	if sum != 1000 || got["tenant=heavy"] != 50 || got[fmt.Sprintf("/light/%d", clusterFlow("one"))] != 1 || got["light"] != 1 {
		t.Errorf("flows: %v", got)
	}
}

// TestSpreadTenantGetsOneShare: one worker, two busy tenants whose every reconcile
// yields (queued again while it runs): a, with one parent in each of fifty namespaces,
// and b, with fifty parents in one. With a fairness key, a's namespaces are one flow and
// the two take turns; without one, a's fifty flows each take a turn for b's one. A light
// parent that comes once every flow had its first turn is taken next either way: its
// flow is fresh. (One that came before waited for the fresh flows that came before it:
// fifty namespaces seen at once look like fifty tenants, unless the key says otherwise.)
func TestSpreadTenantGetsOneShare(t *testing.T) {
	for _, tt := range []struct {
		name        string
		fairnessKey string
		wantB       int // of the first 100 turns
	}{
		{"by namespace", "", 2},
		{"by tenant", "tenant", 50},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := newFairQueue()
			q.fairnessKey = tt.fairnessKey
			q.owner = func(k queueKey) flowOwner {
				if k.Namespace == "b" || k.Namespace == "light" {
					return flowOwner{}
				}
				return flowOwner{Tenant: "a"}
			}
			for i := range 50 {
				q.Push(key(fmt.Sprintf("a-%02d", i), "p"))
				q.Push(key("b", fmt.Sprintf("p%02d", i)))
			}
			turn := func() queueKey {
				k := q.Pop()
				if k.Namespace != "light" {
					q.Push(k)
				}
				q.finished(k)
				return k
			}
			turns := map[string]int{}
			for i := range 100 {
				if i == 80 {
					q.Push(key("light", "p"))
					if got := turn(); got != key("light", "p") {
						t.Fatalf("after the light parent came, the worker took %s; want light/p", short(got))
					}
				}
				k := turn()
				turns[k.Namespace[:1]]++
			}
			if diff := cmp.Diff(map[string]int{"a": 100 - tt.wantB, "b": tt.wantB}, turns); diff != "" {
				t.Errorf("turns of the first 100 by tenant (-want +got):\n%s", diff)
			}
		})
	}
}
