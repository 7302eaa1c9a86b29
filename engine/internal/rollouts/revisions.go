package rollouts

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// Revisions are the rules' revisions in the cluster, as a rule's start reads and
// stores them.
type Revisions struct {
	// Store is nil when revisions are not kept (no namespace for them).
	Store    *rollout.Store
	Lister   appslisters.ControllerRevisionNamespaceLister
	Recorder record.EventRecorder // nil in a dry run
	DryRun   bool
	Keep     int
}

// event records an Event on a stored revision.
func (v *Revisions) event(rev *rollout.Revision, eventType, reason, message string) {
	if v.Recorder != nil && rev.Object != nil {
		v.Recorder.Event(rev.Object, eventType, reason, message)
	}
}

// ListAll reads the revisions of every rule with one list, for an operation that starts
// many rules: nil when revisions are not kept, or when the list fails (each rule then
// lists its own, and reports its own error).
func (v *Revisions) ListAll(ctx context.Context) rollout.Listed {
	if v.Store == nil {
		return nil
	}
	listed, err := v.Store.ListAll(ctx)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot list the rules' revisions at once; each rule lists its own", "err", err)
		return nil
	}
	return listed
}

// Prepared is what starting a rule takes for its revisions: the change to store once it
// runs, and the stable version's rule to run beside it.
type Prepared struct {
	change  rollout.Change
	changed bool
	revs    []*rollout.Revision
	// Stable is the rule of the revision the rollout rolls from; nil when every parent
	// is at the rule's revision.
	Stable *rules.Rule
	// rev is the revision the rule runs at once the change is stored.
	rev *rollout.Revision
}

// Prepare reads a rule's stored revisions and decides what making r its current
// revision takes; it compiles the stable revision when the rollout needs one. It writes
// nothing. listed, when not nil, is what a list of every rule's revisions read at the
// start of the operation (ListAll), read instead of a list of the rule's.
func (v *Revisions) Prepare(ctx context.Context, rs *rules.RuleSet, r *rules.Rule, listed rollout.Listed) (*Prepared, error) {
	if v.Store == nil {
		// Without revisions a rule runs its one version; a rule with a rollout policy
		// then cannot run, but in a dry run (kubecel plan) that is what is planned.
		if r.Rollout != nil && !v.DryRun {
			return nil, fmt.Errorf("rule %q has a rollout policy but the controller keeps no revisions (no namespace for them)", r.Name)
		}
		return &Prepared{}, nil
	}
	var revs []*rollout.Revision
	var err error
	if listed != nil {
		revs, err = v.Store.DecodeRule(r.Name, listed[r.Name])
	} else {
		revs, err = v.Store.List(ctx, r.Name)
	}
	if err != nil {
		return nil, err
	}
	p := &Prepared{revs: revs}
	// Revisions whose source this installation's key does not prove are not its own
	// (written by someone else, or under an earlier key: kubecel run --new-identity):
	// they are left out, and one of the same name is replaced when stored.
	// A revision of the same name whose text came from another source (another team's
	// ConfigMap that used the name before) is not this rule's either: the rule never
	// rolls from it, nor goes back to it.
	ours := slices.DeleteFunc(slices.Clone(revs), func(rev *rollout.Revision) bool { return !rev.Proven || rev.Origin != r.Origin })
	if top := rollout.Current(ours); top != nil && !top.StateProven {
		return nil, fmt.Errorf("rule %q: the rollout state of stored revision %d (%s) does not carry this installation's proof: it was written by someone else, and is not acted on; `kubecel rollout undo %s` or `resume` writes one that does", r.Name, top.Number, top.Hash, r.Name)
	}
	// Decisions rest on the states this installation wrote alone: a revision someone
	// else marked Complete is not rolled from.
	proven := slices.DeleteFunc(slices.Clone(ours), func(rev *rollout.Revision) bool { return !rev.StateProven })
	p.change, p.changed = rollout.Start(proven, r.Revision, r.Rollout != nil, time.Now())
	if renumbered := p.change.Create || p.change.Update != nil && p.change.Number != p.change.Update.Number; p.changed && renumbered {
		// Above every stored revision, ours or not, so that it is the rule's current one.
		if top := rollout.Current(revs); top != nil && p.change.Number <= top.Number {
			p.change.Number = top.Number + 1
		}
	}
	if p.changed {
		p.rev = &rollout.Revision{Rule: r.Name, Hash: r.Revision, Number: p.change.Number, State: p.change.State, Document: r.Document}
		if p.change.Update != nil {
			p.rev.Object = p.change.Update.Object
		}
	} else if cur := rollout.Find(proven, r.Revision); !slices.Equal(cur.Steps, steps(r)) {
		// A policy edit alone makes no revision, but the stored one keeps the policy's
		// steps.
		p.change, p.changed = rollout.Change{Update: cur, Number: cur.Number}, true
		rev := *cur
		p.rev = &rev
	} else {
		p.rev = cur
	}
	if p.changed {
		p.rev.Steps = steps(r)
	}
	if p.rev.Phase == rollout.Complete {
		return p, nil
	}
	from := rollout.Find(revs, p.rev.From)
	switch {
	case from == nil:
		return nil, fmt.Errorf("rule %q: revision %s rolls from revision %s, which is not stored", r.Name, r.Revision, p.rev.From)
	case !from.Proven:
		return nil, fmt.Errorf("rule %q: stored revision %d (%s) does not carry this installation's proof; it was not written by this installation and is not run", r.Name, from.Number, from.Hash)
	}
	if p.Stable, err = StableVersion(rs, r, from); err != nil {
		return nil, err
	}
	return p, nil
}

// StableVersion compiles the stored revision from that a rollout of r rolls from (or
// that r is held at after a rollback), within rs, as it runs beside r for the parents the
// rollout has not moved. The caller has checked from's proof.
func StableVersion(rs *rules.RuleSet, r *rules.Rule, from *rollout.Revision) (*rules.Rule, error) {
	stable, err := rs.Revise(r.Name, from.Document)
	if err != nil {
		return nil, fmt.Errorf("rule %q: compile revision %d (%s), which the rollout rolls from: %w", r.Name, from.Number, from.Hash, err)
	}
	// The version rolled from records its revision on its parents only when it ran under
	// a policy (its stored steps say; the document keeps the policy it was stored with).
	// It never takes steps: only whether it has a policy matters.
	switch {
	case len(from.Steps) == 0:
		stable.Rollout = nil
	case stable.Rollout == nil:
		stable.Rollout = cmp.Or(r.Rollout, &rules.Rollout{Steps: from.Steps})
	}
	return stable, nil
}

// steps are a rule's rollout steps, nil without a policy.
func steps(r *rules.Rule) []float64 {
	if r.Rollout == nil {
		return nil
	}
	return r.Rollout.Steps
}

// Commit stores what Prepare decided, once the rule runs, and returns the revision the
// rule runs at (nil when revisions are not kept). Another replica that stored it first
// wins: its revision is read back. In a dry run nothing is written.
//
// A rule's first revision (nothing stored for the rule) is not stored here: no rollout
// rolls from it yet and nothing stored is replaced or trimmed, so the rollouts store it
// once the controller is idle (Controller.process), and a first start of many rules
// spends the API server on their parents first. Its Object stays nil until then.
func (v *Revisions) Commit(ctx context.Context, r *rules.Rule, p *Prepared, target *watch.Rule) *rollout.Revision {
	if v.Store == nil || !p.changed || v.DryRun || p.first() {
		return p.rev
	}
	logger := klog.FromContext(ctx).WithValues("rule", r.Name, "revision", r.Revision)
	for _, old := range p.change.Supersede {
		if err := v.supersede(ctx, old, p.change.Number, r.Revision); err != nil {
			logger.Error(err, "Cannot mark a rollout superseded", "superseded", old.Hash)
		}
	}
	var got *rollout.Revision
	var err error
	if p.change.Create {
		got, err = v.Store.CreateOrReplace(ctx, r.Name, r.Revision, r.Document, whereOf(target), p.change.Number, p.rev.State)
	} else {
		got, err = v.Store.Update(ctx, p.change.Update, p.change.Number, p.rev.State)
	}
	if err != nil {
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			logger.V(1).Info("Another replica stored the revision first", "reason", err.Error())
		} else {
			logger.Error(err, "Cannot store the rule's revision; the rollout tries again")
		}
		return p.rev
	}
	if err := v.Store.Trim(ctx, append(p.revs, got), v.Keep, got.Hash, got.From); err != nil {
		logger.Error(err, "Cannot delete old revisions")
	}
	logger.Info("Stored rule revision", "number", got.Number, "phase", got.Phase, "from", got.From)
	return got
}

// first reports whether p makes the rule's first revision: one to create, with nothing
// stored for the rule and nothing to supersede.
func (p *Prepared) first() bool {
	return p.changed && p.change.Create && len(p.revs) == 0 && len(p.change.Supersede) == 0
}

// StoreFirst stores the first revision of a running rule that Commit left to the
// rollouts and that they have not stored yet, as a rules reload must before it reads
// the rule's revisions: the edit then rolls from it. It reports whether it wrote (or
// found the revision stored by another replica meanwhile).
func (v *Revisions) StoreFirst(ctx context.Context, rr *Rule) (bool, error) {
	rev := rr.Revision()
	if v.Store == nil || v.DryRun || rev == nil || rev.Object != nil {
		return false, nil
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("rule", rev.Rule))
	got, err := v.storeUnstored(ctx, rr, rev)
	switch {
	case apierrors.IsAlreadyExists(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("rule %q: store its revision %s before the edit: %w", rev.Rule, rev.Hash, err)
	}
	rr.rev.CompareAndSwap(rev, got)
	return true, nil
}

// storeUnstored stores rev, the revision rr runs at, which no ControllerRevision holds
// yet (Commit left it to the rollouts, or failed to store it), and logs it.
func (v *Revisions) storeUnstored(ctx context.Context, rr *Rule, rev *rollout.Revision) (*rollout.Revision, error) {
	got, err := v.Store.CreateOrReplace(ctx, rev.Rule, rev.Hash, rr.target.Rule.Document, whereOf(rr.target), rev.Number, rev.State)
	if err == nil {
		klog.FromContext(ctx).Info("Stored rule revision", "revision", rev.Hash, "number", got.Number, "phase", got.Phase, "from", got.From)
	}
	return got, err
}

// supersede marks a rollout under way superseded by revision number (hash). The rollout
// controller may have written its state since Prepare read it (a step's progress): on a
// conflict the revision is read again and, while it is still under way, marked again.
func (v *Revisions) supersede(ctx context.Context, old *rollout.Revision, number int64, hash string) error {
	var err error
	for range 5 {
		st := old.State
		st.Phase, st.Message = rollout.Superseded, fmt.Sprintf("superseded by revision %d (%s)", number, hash)
		if _, err = v.Store.Update(ctx, old, old.Number, st); !apierrors.IsConflict(err) {
			return err
		}
		revs, lerr := v.Store.List(ctx, old.Rule)
		if lerr != nil {
			return lerr
		}
		if old = rollout.Find(revs, old.Hash); old == nil || old.Phase != rollout.Progressing && old.Phase != rollout.Paused {
			return nil
		}
	}
	return err
}

// whereOf says where a rule's parents are, for the commands.
func whereOf(st *watch.Rule) rollout.Where {
	gvr := st.ParentKind.GVR
	return rollout.Where{
		Origin:         st.Rule.Origin,
		ParentResource: gvr.Group + "/" + gvr.Version + "/" + gvr.Resource,
		ReadyCondition: st.Rule.ReadyCondition, SyncedCondition: st.Rule.SyncedCondition,
	}
}

// stored is the rule's revision as the cache of revisions holds it now, or the one last
// seen when the cache does not hold it (a dry run, or not stored yet), when it lags
// behind this replica's own last write, or when the state it holds does not carry the
// installation's proof (notProven is then set).
func (v *Revisions) stored(last *rollout.Revision) (rev *rollout.Revision, notProven bool) {
	if v.Lister == nil || v.DryRun {
		return last, false
	}
	cr, err := v.Lister.Get(rollout.Name(v.Store.Installation, last.Rule, last.Hash))
	if err != nil || last.Object != nil && !newer(cr.ResourceVersion, last.Object.ResourceVersion) {
		return last, false
	}
	revs, err := v.Store.Decode([]*appsv1.ControllerRevision{cr})
	if err != nil || len(revs) != 1 {
		return last, false
	}
	if !revs[0].StateProven {
		return last, true
	}
	return revs[0], false
}

// newer reports whether resourceVersion a is later than b. The API server's are etcd
// revisions, which only grow; should one not be a number, any difference counts.
func newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x > y
}
