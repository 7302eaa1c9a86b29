package access

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubecel/kubecel/rules"
)

// reviewer is a fake API server's answers to SelfSubjectAccessReviews: it allows what
// allowed holds, counts the reviews it got per permission, and fails those in failing.
type reviewer struct {
	mu      sync.Mutex
	allowed map[Permission]bool
	failing map[Permission]bool
	got     map[Permission]int
	// gate, when set, holds every review until it is closed.
	gate chan struct{}
	// granted are the rules a SelfSubjectRulesReview lists, by namespace; rulesGot counts
	// those reviews by namespace; incomplete marks them incomplete, rulesFail fails them.
	granted               map[string][]authorizationv1.ResourceRule
	rulesGot              map[string]int
	incomplete, rulesFail bool
}

func newReviewer() *reviewer {
	return &reviewer{allowed: map[Permission]bool{}, failing: map[Permission]bool{}, got: map[Permission]int{},
		granted: map[string][]authorizationv1.ResourceRule{}, rulesGot: map[string]int{}}
}

func (rv *reviewer) clientset() *fake.Clientset {
	kube := fake.NewClientset()
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		review := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		ra := review.Spec.ResourceAttributes
		p := Permission{GVR: schema.GroupVersionResource{Group: ra.Group, Version: ra.Version, Resource: ra.Resource},
			Subresource: ra.Subresource, Verb: ra.Verb, Namespace: ra.Namespace}
		if rv.gate != nil {
			<-rv.gate
		}
		rv.mu.Lock()
		defer rv.mu.Unlock()
		rv.got[p]++
		if rv.failing[p] {
			return true, nil, errors.New("the server is unavailable")
		}
		out := review.DeepCopy()
		out.Status.Allowed = rv.allowed[p]
		return true, out, nil
	})
	kube.PrependReactor("create", "selfsubjectrulesreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		review := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectRulesReview)
		if rv.gate != nil {
			<-rv.gate
		}
		rv.mu.Lock()
		defer rv.mu.Unlock()
		ns := review.Spec.Namespace
		rv.rulesGot[ns]++
		if rv.rulesFail {
			return true, nil, errors.New("the server is unavailable")
		}
		out := review.DeepCopy()
		out.Status.ResourceRules, out.Status.Incomplete = rv.granted[ns], rv.incomplete
		return true, out, nil
	})
	return kube
}

func (rv *reviewer) allow(ps ...Permission) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	for _, p := range ps {
		rv.allowed[p] = true
	}
}

// sent is the number of reviews of single permissions received, in all and at most
// for one permission; groups is the number of reviews of everything in a group.
func (rv *reviewer) sent() (total, most int) {
	total, most, _ = rv.count()
	return total, most
}

func (rv *reviewer) count() (total, most, groups int) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	for p, n := range rv.got {
		if p == everything(p.GVR.Group) {
			groups += n
			continue
		}
		total += n
		most = max(most, n)
	}
	return total, most, groups
}

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// twoRules are two rules on different parents that both make ConfigMaps.
const twoRules = `
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules:
  - name: one
    parent: {apiVersion: example.kubecel.dev/v1, resource: ones}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-one"}
  - name: two
    parent: {apiVersion: example.kubecel.dev/v1, resource: twos}
    children:
      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}-two"}
`

// needs is what each rule of twoRules needs, as the controller asks it.
func needs(t *testing.T) map[string][]Permission {
	t.Helper()
	rs, err := rules.Load([]byte(twoRules), rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]Permission{}
	for _, r := range rs.Rules {
		out[r.Name] = Permissions(r.Access(true, []schema.GroupVersionResource{configMaps}))
	}
	return out
}

func TestShared(t *testing.T) {
	need := needs(t)
	rv := newReviewer()
	all := map[Permission]bool{}
	for _, ps := range need {
		rv.allow(ps...)
		for _, p := range ps {
			all[p] = true
		}
	}
	configMapVerbs := 0
	for p := range all {
		if p.GVR == configMaps {
			configMapVerbs++
		}
	}
	if configMapVerbs == 0 || len(all) >= len(need["one"])+len(need["two"]) {
		t.Fatalf("the rules share no permission (%d ConfigMap verbs): the test tests nothing", configMapVerbs)
	}

	reviews := NewReviews(rv.clientset())
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, name := range []string{"one", "two"} {
		wg.Go(func() { errs[i] = reviews.Check(t.Context(), need[name]) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("rule %d: %v", i, err)
		}
	}
	total, most := rv.sent()
	if total != len(all) || most != 1 {
		t.Errorf("reviews sent = %d (at most %d for one permission), want one per permission (%d)", total, most, len(all))
	}
}

func TestDeniedUntilTheNextOperation(t *testing.T) {
	need := needs(t)["one"]
	var create Permission
	for _, p := range need {
		if p.GVR == configMaps && p.Verb == "create" {
			create = p
		}
	}
	rv := newReviewer()
	kube := rv.clientset()
	for _, p := range need {
		if p != create {
			rv.allow(p)
		}
	}

	op := NewReviews(kube)
	err := op.Check(t.Context(), need)
	var forbidden *ForbiddenError
	if !errors.As(err, &forbidden) {
		t.Fatalf("Check = %v, want a ForbiddenError", err)
	}
	if diff := cmp.Diff([]string{"create configmaps in all namespaces"}, forbidden.Missing); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}
	// Granted now: the operation keeps its answer, and asks nothing again.
	rv.allow(create)
	if err := op.Check(t.Context(), need); !errors.As(err, &forbidden) {
		t.Errorf("Check again in the same operation = %v, want the ForbiddenError kept", err)
	}
	if total, _ := rv.sent(); total != len(need) {
		t.Errorf("reviews sent in one operation = %d, want %d", total, len(need))
	}
	// The next operation sees the grant.
	if err := NewReviews(kube).Check(t.Context(), need); err != nil {
		t.Errorf("Check in the next operation = %v, want the grant seen", err)
	}
}

func TestFailedReviewIsAskedAgain(t *testing.T) {
	p := Permission{GVR: configMaps, Verb: "get"}
	rv := newReviewer()
	rv.allow(p)
	rv.failing[p] = true
	reviews := NewReviews(rv.clientset())
	if err := reviews.Check(t.Context(), []Permission{p}); err == nil {
		t.Fatal("Check = nil, want the review's error")
	}
	rv.mu.Lock()
	rv.failing[p] = false
	rv.mu.Unlock()
	if err := reviews.Check(t.Context(), []Permission{p}); err != nil {
		t.Errorf("Check after the server recovered = %v, want nil", err)
	}
	if total, _ := rv.sent(); total != 2 {
		t.Errorf("reviews sent = %d, want 2 (the failed one is not an answer)", total)
	}
}

// TestConcurrentQuestions: many rules asking one permission at once wait for one review.
func TestConcurrentQuestions(t *testing.T) {
	p := Permission{GVR: configMaps, Verb: "list", Namespace: "team"}
	rv := newReviewer()
	rv.allow(p)
	rv.gate = make(chan struct{})
	checkAtOnce(t, rv, NewReviews(rv.clientset()), 20, p)
	if total, _ := rv.sent(); total != 1 {
		t.Errorf("reviews sent = %d, want 1", total)
	}
}

func TestPermissionString(t *testing.T) {
	tests := []struct {
		p    Permission
		want string
	}{
		{Permission{GVR: configMaps, Verb: "create"}, "create configmaps in all namespaces"},
		{Permission{GVR: schema.GroupVersionResource{Group: "example.kubecel.dev", Version: "v1", Resource: "webapps"}, Subresource: "status", Verb: "patch", Namespace: "team"},
			"patch webapps.example.kubecel.dev/status in namespace team"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.p), func(t *testing.T) {
			if got := tt.p.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEverythingInAGroup: a controller that may do everything in a group is asked that
// once per group and operation, and none of the group's single permissions; a group it
// may not do everything in is asked permission by permission, and a review of a group
// that failed is no answer: the single permissions decide.
func TestEverythingInAGroup(t *testing.T) {
	need := needs(t)
	var all []Permission
	for _, name := range []string{"one", "two"} {
		all = append(all, need[name]...)
	}
	tests := []struct {
		name string
		// allow and fail are the groups whose everything the reviewer allows or fails.
		allow, fail []string
		// singles lets the reviewer allow every single permission too.
		singles bool
		// wantSingles is the number of single reviews sent, -1 for one per permission
		// outside the groups allowed; wantErr whether Check fails with a ForbiddenError.
		wantGroups, wantSingles int
		wantErr                 bool
	}{
		{name: "both groups allowed", allow: []string{"", "example.kubecel.dev"}, wantGroups: 2, wantSingles: 0},
		{name: "one group allowed", allow: []string{""}, singles: true, wantGroups: 2, wantSingles: -1},
		{name: "none allowed, singles granted", singles: true, wantGroups: 2, wantSingles: -1},
		{name: "none allowed, nothing granted", wantGroups: 2, wantSingles: -1, wantErr: true},
		{name: "the group's review fails", fail: []string{"", "example.kubecel.dev"}, singles: true, wantGroups: 2, wantSingles: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rv := newReviewer()
			for _, g := range tt.allow {
				rv.allow(everything(g))
			}
			for _, g := range tt.fail {
				rv.failing[everything(g)] = true
			}
			if tt.singles {
				rv.allow(all...)
			}
			reviews := NewReviews(rv.clientset())
			var errs []error
			for _, name := range []string{"one", "two"} {
				errs = append(errs, reviews.Check(t.Context(), need[name]))
			}
			for _, err := range errs {
				var forbidden *ForbiddenError
				if got := errors.As(err, &forbidden); got != tt.wantErr || err != nil && !tt.wantErr {
					t.Errorf("Check = %v, want a ForbiddenError: %v", err, tt.wantErr)
				}
			}
			want := tt.wantSingles
			if want < 0 {
				singles := map[Permission]bool{}
				for _, p := range all {
					if !slices.Contains(tt.allow, p.GVR.Group) {
						singles[p] = true
					}
				}
				want = len(singles)
			}
			total, most, groups := rv.count()
			if groups != tt.wantGroups || total != want || most > 1 {
				t.Errorf("reviews: %d of groups, %d of single permissions (at most %d of one); want %d and %d, each once", groups, total, most, tt.wantGroups, want)
			}
		})
	}
}
