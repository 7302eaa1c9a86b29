// Package access asks the API server whether the controller may do what a rule needs,
// before the rule starts. First it asks which rules it was granted, with one
// SelfSubjectRulesReview per namespace (granted.go): a permission those rules cover
// needs no review of its own, so that a thousand rules on a thousand CRDs, under the
// least-privilege roles `kubecel rbac` writes, ask one review instead of seven thousand.
// What they do not cover (an authorizer that cannot list its rules, a permission that is
// missing) is asked with a SelfSubjectAccessReview per resource, subresource, verb and
// namespace; before those of a group, once whether the controller may do everything in
// the group (every verb on every resource, in every namespace), which answers for the
// group when it may.
//
// A Reviews lives for one operation of the rule lifecycle (a rules reload, a retry of the
// rules that wait) and answers each question once within it, however many of the rules
// it starts ask it: rules on one child kind share its reviews. Its reviews for one rule
// are sent at once, at most ReviewsInFlight of them.
//
// Guarantees:
//   - An answer is kept only as long as its Reviews: a permission denied now and granted
//     later is asked again by the next operation (the retry of a waiting rule).
//   - A review that failed (the request, not the answer) is not kept: the next question
//     sends it again. A failed review of a whole group counts as no answer, and is not
//     sent again in the operation: the single permissions decide. So does a failed
//     rules review: it counts as no rules, for the rest of the operation.
//   - Rules cover a permission only where they apply: the rules of a namespace never
//     answer for all namespaces.
//   - Concurrent questions of the same permission, or of one namespace's rules, wait
//     for one review.
package access

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"golang.org/x/sync/errgroup"

	"github.com/kubecel/kubecel/rules"
)

// ReviewsInFlight is the most reviews one Check sends at once.
const ReviewsInFlight = 8

// Permission is one verb on one resource, in one namespace ("" for all).
type Permission struct {
	GVR         schema.GroupVersionResource
	Subresource string
	Verb        string
	Namespace   string
}

func (p Permission) String() string {
	res := p.GVR.Resource
	if p.GVR.Group != "" {
		res += "." + p.GVR.Group
	}
	if p.Subresource != "" {
		res += "/" + p.Subresource
	}
	where := "all namespaces"
	if p.Namespace != "" {
		where = "namespace " + p.Namespace
	}
	return fmt.Sprintf("%s %s in %s", p.Verb, res, where)
}

// Permissions lists needed (as rules.Rule.Access gives it) one verb per entry.
func Permissions(needed []rules.Access) []Permission {
	var out []Permission
	for _, a := range needed {
		for _, verb := range a.Verbs {
			out = append(out, Permission{GVR: a.Resource, Subresource: a.Subresource, Verb: verb, Namespace: a.Namespace})
		}
	}
	return out
}

// Reviews answers whether the controller holds permissions, each once (see the package
// doc). Make one per lifecycle operation with NewReviews; it is safe for concurrent use.
type Reviews struct {
	kube kubernetes.Interface

	mu      sync.Mutex
	answers map[Permission]*asked[answer]
	// granted are the rules reviews sent, by namespace (clusterScope for all).
	granted map[string]*asked[[]rbacv1.PolicyRule]
}

// answer is one access review's.
type answer struct {
	allowed bool
	err     error
}

// asked is a question asked once: done is closed once val is set.
type asked[V any] struct {
	done chan struct{}
	val  V
}

// askOnce answers the question key of m (whose entries mu guards): with the answer
// already given, with the one being given (waited for), or with ask's, given now. When
// forget reports true of ask's answer, the question is left unasked for the next caller;
// those waiting meanwhile get that answer too.
func askOnce[K comparable, V any](ctx context.Context, mu *sync.Mutex, m map[K]*asked[V], key K, ask func() V, forget func(V) bool) (V, error) {
	mu.Lock()
	q, before := m[key]
	if !before {
		q = &asked[V]{done: make(chan struct{})}
		m[key] = q
	}
	mu.Unlock()
	if before {
		select {
		case <-q.done:
			return q.val, nil
		case <-ctx.Done():
			var none V
			return none, ctx.Err()
		}
	}
	q.val = ask()
	if forget(q.val) {
		mu.Lock()
		delete(m, key)
		mu.Unlock()
	}
	close(q.done)
	return q.val, nil
}

// NewReviews returns an empty Reviews that sends its reviews through kube.
func NewReviews(kube kubernetes.Interface) *Reviews {
	return &Reviews{kube: kube, answers: map[Permission]*asked[answer]{}, granted: map[string]*asked[[]rbacv1.PolicyRule]{}}
}

// Check reports whether the controller holds every permission needed: nil when it
// does, a *ForbiddenError listing those it lacks, or the error of a review that failed.
func (r *Reviews) Check(ctx context.Context, needed []Permission) error {
	allowed := make([]bool, len(needed))
	// Not errgroup.WithContext: a review another rule waits for is not cancelled because
	// one of this rule's failed.
	var g errgroup.Group
	g.SetLimit(ReviewsInFlight)
	for i, p := range needed {
		g.Go(func() error {
			ok, err := r.Allowed(ctx, p)
			allowed[i] = ok
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("check permissions: %w", err)
	}
	var denied []string
	for i, p := range needed {
		if !allowed[i] {
			denied = append(denied, p.String())
		}
	}
	if len(denied) == 0 {
		return nil
	}
	slices.Sort(denied)
	return &ForbiddenError{Missing: slices.Compact(denied)}
}

// Allowed reports whether the controller holds p, as this Reviews' reviews say: the
// rules it was granted where p applies, then, unless they cover p, the review of
// everything in p's group, then, unless that allowed it, the review of p; each sent when
// it was not asked before.
func (r *Reviews) Allowed(ctx context.Context, p Permission) (bool, error) {
	if r.covered(ctx, p) {
		return true, nil
	}
	if all := everything(p.GVR.Group); p != all {
		// A review of the group that failed is no answer either way: p's own decides,
		// and the group is not asked again in this operation.
		if ok, err := r.allowed(ctx, all, true); err == nil && ok {
			return true, nil
		}
	}
	return r.allowed(ctx, p, false)
}

// everything is every verb on every resource and subresource of group, in every
// namespace.
func everything(group string) Permission {
	return Permission{GVR: schema.GroupVersionResource{Group: group, Resource: "*"}, Verb: "*"}
}

// allowed answers one permission, sending its review when it was not asked before. A
// review that failed is asked again by the next question, unless keepFailure.
func (r *Reviews) allowed(ctx context.Context, p Permission, keepFailure bool) (bool, error) {
	a, err := askOnce(ctx, &r.mu, r.answers, p, func() answer {
		ok, err := r.review(ctx, p)
		return answer{ok, err}
	}, func(a answer) bool {
		return a.err != nil && !keepFailure // a failed request is no answer: the next question asks again
	})
	if err != nil {
		return false, err
	}
	return a.allowed, a.err
}

// review sends one SelfSubjectAccessReview.
func (r *Reviews) review(ctx context.Context, p Permission) (bool, error) {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: p.GVR.Group, Version: p.GVR.Version, Resource: p.GVR.Resource,
			Subresource: p.Subresource, Verb: p.Verb, Namespace: p.Namespace,
		},
	}}
	got, err := r.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return got.Status.Allowed, nil
}

// ForbiddenError lists the permissions a rule lacks.
type ForbiddenError struct{ Missing []string }

func (e *ForbiddenError) Error() string {
	return "missing permissions (add them with `kubecel rbac`): " + strings.Join(e.Missing, "; ")
}
