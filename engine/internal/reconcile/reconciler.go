package reconcile

import (
	"context"
	"errors"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"

	"github.com/kubecel/kubecel/engine/internal/informers"
	"github.com/kubecel/kubecel/engine/internal/metrics"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/rules"
)

// Options configures a Reconciler.
type Options struct {
	// Client sends every request (writer).
	Client dynamic.Interface
	// Identity proves the children the reconciler creates and tells its objects apart.
	Identity *rules.Identity
	// AdoptUnproven takes over children made by a kubecel before proofs.
	AdoptUnproven bool
	// KeyReplaced: the installation's key replaced an earlier one (engine.Options).
	KeyReplaced bool
	// DryRun sends every write with DryRun=All and remembers none.
	DryRun bool
	// MaxWrites is how many child writes one reconcile sends before it yields.
	MaxWrites int
	// Recorder records Events on parents (nil in a dry run: none are recorded).
	Recorder record.EventRecorder
	Metrics  *metrics.Metrics
	// Written is the memory of the controller's writes, shared with the watches that
	// drop their echoes.
	Written *informers.Written
	// Known reports whether a rule of that name runs or waits to run.
	Known func(rule string) bool
}

// Reconciler makes one parent at a time match its rule (Reconcile): it evaluates the
// rule, and hands the work to its parts: children writes the children, report the
// status and Events, deletion what is deleted or released, finalizers the rules'
// finalizers. What outlives one reconcile of a parent lives in one place, its memory.
type Reconciler struct {
	opts     Options
	children *children
	report   *reporter
	// memory is everything kept about each parent between its reconciles (memory.go).
	memory *memory
	// waiting holds the parents whose child's name another object holds.
	waiting *waiters
	// finalizers adds and removes the rules' finalizers on parents, and remembers the
	// parents it added one to (finalize.go).
	finalizers *finalizers
	// deletion prunes, releases and tears down children, and remembers the deletes in
	// flight and the parents seen deleted (deletion.go).
	deletion *deletion
}

// New returns a Reconciler.
func New(opts Options) *Reconciler {
	send := writer{client: opts.Client, dryRun: opts.DryRun, written: opts.Written}
	events := recorder{r: opts.Recorder}
	batch := batchSize(opts)
	mem := newMemory()
	waiting := newWaiters()
	fin := &finalizers{send: send, memory: mem}
	return &Reconciler{
		opts: opts,
		children: &children{
			opts: opts, send: send, metrics: opts.Metrics, written: opts.Written, events: events,
			batch: batch, memory: mem, waiting: waiting, finalizers: fin,
		},
		report:     &reporter{send: send, written: opts.Written, events: events, memory: mem},
		memory:     mem,
		waiting:    waiting,
		finalizers: fin,
		deletion: &deletion{
			send: send, dryRun: opts.DryRun, batch: batch, metrics: opts.Metrics, events: events, finalizers: fin,
			deleting: newDeleting(), memory: mem,
		},
	}
}

// Result is what a reconcile asks of the queue besides its error. RequeueAfter is the
// one way to ask for a delayed look:
//
//	error     RequeueAfter  the loop
//	nil       0             forgets the key: the next event brings it back
//	nil       d             forgets the key's backoff and looks again after d
//	terminal  any           forgets the key: retrying cannot help, the next change can
//	other     0             retries with the queue's per-key exponential backoff
//	other     d             retries after d, neither growing nor resetting the backoff
//	nil       Yield, Again  forgets the key's backoff and queues it again at once
type Result struct {
	RequeueAfter time.Duration
	// Yield is set by a reconcile that sent its batch of writes with more to send: the
	// key goes to the back of its flow at once (no backoff), and the next turn continues.
	Yield bool
	// Again asks for the same without work left: something the reconcile read may have
	// changed while it ran (a ref's event came before the index knew the parent reads it).
	Again bool
	// Reason says why a reconcile of a live parent failed, for
	// kubecel_reconcile_errors_total: the reason of the parent's Synced condition, or
	// reasonStatusFailed.
	Reason string
}

// reasonStatusFailed is the reason of a failed reconcile whose only failure was writing
// the parent's status.
const reasonStatusFailed = "StatusFailed"

// terminalError is a failure that a retry without a change would only repeat, such as
// an evaluation error of the rule. Wrap with Terminal.
type terminalError struct{ err error }

// Terminal marks err as a failure that retrying without a change would only repeat.
func Terminal(err error) error { return &terminalError{err: err} }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// IsTerminal reports whether err is a failure that retrying without a change would only
// repeat: the loop forgets the key until the next change.
func IsTerminal(err error) bool { return errors.As(err, new(*terminalError)) }

// batchSize is how many child writes one reconcile sends before it yields
// (Options.MaxWrites), unlimited in a dry run: nothing a dry run sends shows in the
// caches, so a next turn would find the same writes to send.
func batchSize(opts Options) int {
	if opts.DryRun || opts.MaxWrites <= 0 {
		return math.MaxInt
	}
	return opts.MaxWrites
}

// ForgetRule drops what the reconciler keeps for a rule that stopped.
func (c *Reconciler) ForgetRule(name string) { c.memory.forgetRule(name) }

// ChildLeft is told of a child deleted (deleted) or whose parent changed (watch.Events),
// and returns the parents that waited for its name, to queue.
func (c *Reconciler) ChildLeft(o *informers.Object, deleted bool) []watch.Key {
	if deleted {
		c.deletion.childDeleted(o.GetUID())
	}
	return c.waiting.take(watch.KeyOf(o).String())
}

// ParentDeleted records a parent its rule's informer saw deleted (watch.Events), for its
// teardown.
func (c *Reconciler) ParentDeleted(key watch.Key, uid types.UID, sure, orphan bool) {
	c.deletion.parentDeleted(key, uid, sure, orphan)
}

// MayHold reports whether parent carries the rule's finalizer or may carry it: the
// cached parent shows it, or this reconciler sent it and has not removed it since (the
// cache may not show it yet).
func (c *Reconciler) MayHold(st *watch.Rule, parent *unstructured.Unstructured) bool {
	return c.finalizers.mayHold(st, parent)
}

// ReleaseParent removes the rule's finalizer from a parent of a rule that was removed
// from the rules, so that the parent can still be deleted; its children stay.
func (c *Reconciler) ReleaseParent(ctx context.Context, st *watch.Rule, parent *unstructured.Unstructured) error {
	return c.finalizers.remove(ctx, st, parent)
}

// parentGone forgets what the reconciler kept about a parent its rule no longer holds.
func (c *Reconciler) parentGone(st *watch.Rule, key watch.Key) {
	c.memory.forget(key) // its finalizer too: gone, or released with what the server says
	st.DropReads(key)
}
