package access

import (
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var widgets = schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "widgets"}

// TestGrantedRules: the rules a SelfSubjectRulesReview lists answer the permissions they
// cover, as RBAC matches them, with one rules review per namespace and no review of
// their own; a permission in all namespaces is answered only by the cluster-wide rules;
// what the rules do not cover, and everything when the rules review fails, is asked
// permission by permission, and an incomplete list still answers what it lists.
func TestGrantedRules(t *testing.T) {
	listWidgets := Permission{GVR: widgets, Verb: "list"}
	patchStatus := Permission{GVR: widgets, Subresource: "status", Verb: "patch"}
	createConfigMaps := Permission{GVR: configMaps, Verb: "create"}
	teamConfigMaps := Permission{GVR: configMaps, Verb: "create", Namespace: "team"}
	clusterWide := []authorizationv1.ResourceRule{
		{Verbs: []string{"get", "list", "watch", "patch"}, APIGroups: []string{"example.kubecel.dev"}, Resources: []string{"widgets"}},
		{Verbs: []string{"patch"}, APIGroups: []string{"example.kubecel.dev"}, Resources: []string{"widgets/status"}},
	}
	inTeam := append(clusterWide, authorizationv1.ResourceRule{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"configmaps"}})
	tests := []struct {
		name    string
		granted map[string][]authorizationv1.ResourceRule
		// incomplete marks the rules reviews incomplete; rulesFail fails them.
		incomplete, rulesFail bool
		need                  []Permission
		// allowed are the permissions the access reviews allow.
		allowed []Permission
		// wantRules are the rules reviews sent, by namespace; wantSingles the single
		// permissions reviewed; wantMissing what Check says is missing.
		wantRules   map[string]int
		wantSingles []Permission
		wantMissing []string
	}{{
		name:      "cluster-wide grants answer for all namespaces",
		granted:   map[string][]authorizationv1.ResourceRule{clusterScope: clusterWide},
		need:      []Permission{listWidgets, patchStatus},
		wantRules: map[string]int{clusterScope: 1},
	}, {
		name:    "widgets do not cover widgets/status",
		granted: map[string][]authorizationv1.ResourceRule{clusterScope: clusterWide[:1]},
		need:    []Permission{listWidgets, patchStatus}, allowed: []Permission{patchStatus},
		wantRules: map[string]int{clusterScope: 1}, wantSingles: []Permission{patchStatus},
	}, {
		name:      "a wildcard covers every resource and subresource",
		granted:   map[string][]authorizationv1.ResourceRule{clusterScope: {{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}},
		need:      []Permission{listWidgets, patchStatus, createConfigMaps},
		wantRules: map[string]int{clusterScope: 1},
	}, {
		name:      "a namespace's grants answer for that namespace only",
		granted:   map[string][]authorizationv1.ResourceRule{"team": inTeam},
		need:      []Permission{teamConfigMaps, createConfigMaps},
		wantRules: map[string]int{clusterScope: 1, "team": 1}, wantSingles: []Permission{createConfigMaps},
		wantMissing: []string{"create configmaps in all namespaces"},
	}, {
		name:       "an incomplete list answers what it lists",
		granted:    map[string][]authorizationv1.ResourceRule{clusterScope: clusterWide[:1]},
		incomplete: true,
		need:       []Permission{listWidgets, patchStatus}, allowed: []Permission{patchStatus},
		wantRules: map[string]int{clusterScope: 1}, wantSingles: []Permission{patchStatus},
	}, {
		name:      "a failed rules review: each permission is asked",
		granted:   map[string][]authorizationv1.ResourceRule{clusterScope: clusterWide},
		rulesFail: true,
		need:      []Permission{listWidgets, patchStatus}, allowed: []Permission{listWidgets, patchStatus},
		wantRules: map[string]int{clusterScope: 1}, wantSingles: []Permission{listWidgets, patchStatus},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rv := newReviewer()
			rv.granted, rv.incomplete, rv.rulesFail = tt.granted, tt.incomplete, tt.rulesFail
			rv.allow(tt.allowed...)
			reviews := NewReviews(rv.clientset())
			// Twice: the second Check of the operation asks nothing again.
			for range 2 {
				checkMissing(t, reviews.Check(t.Context(), tt.need), tt.wantMissing)
			}
			if diff := cmp.Diff(tt.wantRules, rv.rulesGot); diff != "" {
				t.Errorf("rules reviews by namespace (-want +got):\n%s", diff)
			}
			singles := map[Permission]int{}
			for _, p := range tt.wantSingles {
				singles[p] = 1
			}
			got := map[Permission]int{}
			for p, n := range rv.got {
				if p != everything(p.GVR.Group) {
					got[p] = n
				}
			}
			if diff := cmp.Diff(singles, got); diff != "" {
				t.Errorf("single reviews (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGrantedRulesOnce: many rules starting at once wait for one rules review.
func TestGrantedRulesOnce(t *testing.T) {
	rv := newReviewer()
	rv.granted[clusterScope] = []authorizationv1.ResourceRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}
	rv.gate = make(chan struct{})
	checkAtOnce(t, rv, NewReviews(rv.clientset()), 20, Permission{GVR: configMaps, Verb: "list"})
	if diff := cmp.Diff(map[string]int{clusterScope: 1}, rv.rulesGot); diff != "" {
		t.Errorf("rules reviews (-want +got):\n%s", diff)
	}
	if total, _ := rv.sent(); total != 0 {
		t.Errorf("single reviews = %d, want 0", total)
	}
}

// checkMissing checks err, what Check returned: nil when want is nil, else a
// ForbiddenError that lists want as missing.
func checkMissing(t *testing.T, err error, want []string) {
	t.Helper()
	var forbidden *ForbiddenError
	switch {
	case want == nil && err != nil:
		t.Fatalf("Check = %v, want nil", err)
	case want != nil && !errors.As(err, &forbidden):
		t.Fatalf("Check = %v, want a ForbiddenError", err)
	case want != nil:
		if diff := cmp.Diff(want, forbidden.Missing); diff != "" {
			t.Errorf("missing (-want +got):\n%s", diff)
		}
	}
}

// checkAtOnce checks p from n goroutines, whose reviews rv's gate holds until all n are
// started, and expects every check to pass.
func checkAtOnce(t *testing.T, rv *reviewer, reviews *Reviews, n int, p Permission) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- reviews.Check(t.Context(), []Permission{p}) })
	}
	close(rv.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
