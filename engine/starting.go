package engine

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/kubecel/kubecel/engine/internal/access"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// An operation of the lifecycle (a rules reload, a retry of the waiting rules) starts
// its rules at once: a rule's start is mostly waiting on the API server (its CRD,
// discovery, access reviews, revisions), so a thousand rules start in the time the
// server takes to answer them, not a thousand times a rule's round trips. Access
// reviews are asked once per group or permission for the operation (access), and an
// operation that starts many rules reads every rule's revisions with one list. The results
// are then applied one rule after another, in the order of the rules' names, as if
// they had started so.

// startWorkers is how many rules one operation starts at once.
var startWorkers = max(16, 8*runtime.GOMAXPROCS(0))

// listAllFrom is the number of rules from which an operation reads the revisions of
// every rule with one list, instead of a list per rule (the first start of a large
// installation): below it, the rules' own lists read less. Tests lower it.
var listAllFrom atomic.Int64

func init() { listAllFrom.Store(64) }

// startJob is one rule to start, the version it replaces (nil when none runs), and,
// once startAll returns, what came of it.
type startJob struct {
	rule *rules.Rule
	old  *runningRule

	next *runningRule
	err  error
}

// startJobs are the jobs for rs, sorted by rule name.
func startJobs(rs []*rules.Rule, old func(name string) *runningRule) []*startJob {
	jobs := make([]*startJob, 0, len(rs))
	for _, r := range rs {
		jobs = append(jobs, &startJob{rule: r, old: old(r.Name)})
	}
	slices.SortFunc(jobs, func(a, b *startJob) int { return strings.Compare(a.rule.Name, b.rule.Name) })
	return jobs
}

// startAll starts the rules of jobs, startWorkers at a time, and returns once every one
// has started or failed. before and after, when set, are the test hooks beforeStart and
// started: before is called from each rule's start as it begins, at once for rules that
// start together; after, once they all ended, for each rule that started, in the jobs'
// order, from the caller's goroutine. The caller holds l.mu: it reads l's state while
// the starts run, and changes it after.
func (l *lifecycle) startAll(ctx context.Context, jobs []*startJob, before func(rule string), after func(st *watch.Rule)) {
	l.startGroup(ctx, l.operation(ctx, len(jobs)), jobs, before, after)
}

// operation is what the starts of one lifecycle operation share: its access reviews and,
// when it starts listAllFrom rules or more, the revisions of every rule read with one
// list.
type operation struct {
	reviews *access.Reviews
	listed  rollout.Listed
}

// operation begins an operation that starts n rules.
func (l *lifecycle) operation(ctx context.Context, n int) operation {
	op := operation{reviews: l.reviews()}
	if int64(n) >= listAllFrom.Load() {
		op.listed = l.revs.ListAll(ctx)
	}
	return op
}

// startGroup is startAll for some of the jobs of operation op.
func (l *lifecycle) startGroup(ctx context.Context, op operation, jobs []*startJob, before func(rule string), after func(st *watch.Rule)) {
	reviews, listed := op.reviews, op.listed
	var g errgroup.Group
	g.SetLimit(startWorkers)
	for _, j := range jobs {
		g.Go(func() error {
			if before != nil {
				before(j.rule.Name)
			}
			j.next, j.err = l.start(ctx, reviews, listed, j.rule, j.old)
			return nil
		})
	}
	_ = g.Wait() // every job's error is its own
	for _, j := range jobs {
		if j.err == nil && after != nil {
			after(j.next.st)
		}
	}
}

// reviews returns the access reviews of one operation: each permission its rules need
// is asked once, and asked again by the next operation (a permission granted meanwhile
// is seen). Nil when the controller does not check its permissions.
func (l *lifecycle) reviews() *access.Reviews {
	if l.opts.SkipAccessCheck {
		return nil
	}
	return access.NewReviews(l.kube)
}

// publishEvery is how many rules of a first start are published together: each group
// runs (its parents are reconciled) while the next starts. Tests lower it.
var publishEvery atomic.Int64

func init() { publishEvery.Store(128) }

// startEarly starts the jobs of a first start but the last publishEvery, publishEvery
// at a time, and publishes each group once it started, the rules still to start known
// to the view (so that nothing of theirs is taken for a removed rule's); it returns the
// jobs left, which the caller starts and applies as it applies any. The rules that fail
// wait, as the caller would have them wait. The caller holds l.mu.
func (l *lifecycle) startEarly(ctx context.Context, op operation, jobs []*startJob) []*startJob {
	if int64(len(jobs)) <= publishEvery.Load() {
		return jobs
	}
	l.starting = map[string]bool{}
	for _, j := range jobs {
		l.starting[j.rule.Name] = true
	}
	defer func() { l.starting = nil }()
	for every := int(publishEvery.Load()); len(jobs) > every; {
		group := jobs[:every]
		jobs = jobs[every:]
		l.startGroup(ctx, op, group, l.beforeStart, l.started)
		var started []*runningRule
		l.starting = maps.Clone(l.starting) // a published view keeps its own
		for _, j := range group {
			delete(l.starting, j.rule.Name)
			if j.err != nil {
				l.setPending(ctx, j.rule, j.err)
				continue
			}
			l.running[j.rule.Name] = j.next
			started = append(started, j.next)
		}
		l.publish()
		for _, rr := range started {
			enqueueAll(l.enqueue, rr.st)
		}
		l.notice(started...)
	}
	return jobs
}
