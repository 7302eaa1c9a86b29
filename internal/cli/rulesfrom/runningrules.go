package rulesfrom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// The rules an installation runs are its rules' current revisions: the ControllerRevisions
// the controller stores in the identity Secret's namespace, one per revision of each rule,
// each holding the rule's document and a proof made with the installation's key. A
// command reads them only when every proof it needs verifies, so that whoever can write
// in that namespace cannot show it a rule the installation does not run.

// RunningRule is one rule of the installation, as its revisions say.
type RunningRule struct {
	// Revs are the rule's stored revisions, oldest first.
	Revs []*rollout.Revision
	// Cur is the current one.
	Cur *rollout.Revision
	// From is the revision Cur rolls from (Progressing, Paused) or is held at
	// (RolledBack), when it is stored.
	From *rollout.Revision
	// Stable is From compiled as the controller runs it for the parents the rollout has
	// not moved (nil when From is).
	Stable *rules.Rule
}

// Held reports whether every parent runs the revision rolled back to.
func (rr *RunningRule) Held() bool { return rr.Cur.Phase == rollout.RolledBack }

// Rolling reports whether the parents are split between cur and from.
func (rr *RunningRule) Rolling() bool {
	return rr.Stable != nil && (rr.Cur.Phase == rollout.Progressing || rr.Cur.Phase == rollout.Paused)
}

// loadRunning loads the current revisions of the installation's rules, after checking
// their proofs with its key.
func loadRunning(ctx context.Context, env Env) (*Loaded, error) {
	id, err := env.Identity.Load(ctx, env.Config, identity.ReadOnly, false)
	if err != nil {
		return nil, err
	}
	store, err := RevisionStore(env.Config, env.Identity, id)
	if err != nil {
		return nil, err
	}
	byRule, err := ListRevisions(ctx, store)
	if err != nil {
		return nil, err
	}
	if len(byRule) == 0 {
		return nil, fmt.Errorf("installation %q has no rule revisions in namespace %s: none of its controllers has run there (check --installation and --identity-secret), or give the rules with --rules, --rules-configmap or --rules-configmap-selector",
			store.Installation, store.Namespace)
	}
	running, docs, err := currentRevisions(store, byRule)
	if err != nil {
		return nil, err
	}
	rs, err := rules.LoadDocuments(docs, env.Options)
	if err != nil {
		return nil, fmt.Errorf("the installation's running revisions do not load here (were CRD schemas changed?): %w", err)
	}
	if err := compileStable(rs, running); err != nil {
		return nil, err
	}
	return &Loaded{Set: rs, From: runningFrom(store), Cluster: true, Running: running, id: id}, nil
}

// runningFrom names the installation's revisions in the output.
func runningFrom(store *rollout.Store) string {
	return fmt.Sprintf("the running revisions of installation %q (%s)", store.Installation, store.Namespace)
}

// ListRevisions reads every revision of the installation's rules, by rule.
func ListRevisions(ctx context.Context, store *rollout.Store) (map[string][]*appsv1.ControllerRevision, error) {
	list, err := store.Client.AppsV1().ControllerRevisions(store.Namespace).List(ctx, metav1.ListOptions{LabelSelector: store.Selector("").String()})
	if err != nil {
		return nil, fmt.Errorf("read the installation's revisions (ControllerRevisions in %s): %w; give the rules with --rules, --rules-configmap or --rules-configmap-selector instead", store.Namespace, err)
	}
	byRule := map[string][]*appsv1.ControllerRevision{}
	for i := range list.Items {
		cr := &list.Items[i]
		byRule[cr.Labels[contract.LabelRule]] = append(byRule[cr.Labels[contract.LabelRule]], cr)
	}
	return byRule, nil
}

// currentRevisions decodes each rule's revisions and returns, in the order of the rules'
// names, the documents of their current revisions (each a RuleSet of one rule, named
// after the revision). A current revision whose proof does not verify is refused.
func currentRevisions(store *rollout.Store, byRule map[string][]*appsv1.ControllerRevision) (map[string]*RunningRule, []rules.Document, error) {
	running := map[string]*RunningRule{}
	var docs []rules.Document
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(byRule)) {
		revs, err := store.Decode(byRule[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %q: %w", name, err))
			continue
		}
		cur := rollout.Current(revs)
		if !cur.Proven {
			errs = append(errs, Unproven(store, name, "current revision", cur))
			continue
		}
		data, err := ruleSetOf(cur.Document)
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %q: revision %d (%s): %w", name, cur.Number, cur.Hash, err))
			continue
		}
		running[name] = &RunningRule{Revs: revs, Cur: cur}
		docs = append(docs, rules.Document{Source: fmt.Sprintf("revision %d of rule %s", cur.Number, name), Data: data})
	}
	return running, docs, errors.Join(errs...)
}

// Unproven refuses a revision whose proof is not the installation's.
func Unproven(store *rollout.Store, rule, which string, rev *rollout.Revision) error {
	return fmt.Errorf("rule %q: its %s %d (%s) in namespace %s does not carry installation %q's proof: it was not stored by this installation (or the identity Secret holds another key), so it is not read as the installation's rules",
		rule, which, rev.Number, rev.Hash, store.Namespace, store.Installation)
}

// ruleSetOf wraps one rule's document (its source as JSON) in a RuleSet.
func ruleSetOf(document []byte) ([]byte, error) {
	var rule map[string]any
	if err := json.Unmarshal(document, &rule); err != nil {
		return nil, fmt.Errorf("its document is not a rule: %w", err)
	}
	return json.Marshal(map[string]any{"apiVersion": "kubecel.dev/v1alpha1", "kind": "RuleSet", "rules": []any{rule}})
}

// compileStable checks that each rule compiles to the revision it was read from, and
// compiles the revision each rollout rolls from (or is held at) as the controller runs it.
func compileStable(rs *rules.RuleSet, running map[string]*RunningRule) error {
	var errs []error
	for _, r := range rs.Rules {
		rr := running[r.Name]
		if rr == nil {
			errs = append(errs, fmt.Errorf("rule %q: a revision of another rule holds it", r.Name))
			continue
		}
		if r.Revision != rr.Cur.Hash {
			errs = append(errs, mismatch(r.Name, rr.Cur, r.Revision))
			continue
		}
		errs = append(errs, compileFrom(rs, r, rr))
	}
	return errors.Join(errs...)
}

// compileFrom compiles the revision a rule's current one rolls from (or is held at) as
// the controller runs it, into rr.stable; nothing when there is none.
func compileFrom(rs *rules.RuleSet, r *rules.Rule, rr *RunningRule) error {
	switch rr.Cur.Phase {
	case rollout.Progressing, rollout.Paused, rollout.RolledBack:
	default:
		return nil
	}
	rr.From = rollout.Find(rr.Revs, rr.Cur.From)
	switch {
	case rr.From == nil && rr.Held():
		return fmt.Errorf("rule %q: revision %d (%s) was rolled back to revision %s, which is no longer stored", r.Name, rr.Cur.Number, rr.Cur.Hash, rr.Cur.From)
	case rr.From == nil:
		return nil // its parents not moved yet are shown at the current revision
	case !rr.From.Proven:
		return fmt.Errorf("rule %q: its revision %d (%s), which revision %d rolls from, does not carry the installation's proof: it was not stored by this installation, so it is not read as the installation's rules",
			r.Name, rr.From.Number, rr.From.Hash, rr.Cur.Number)
	}
	stable, err := engine.StableVersion(rs, r, rr.From)
	if err != nil {
		return err
	}
	if stable.Revision != rr.From.Hash {
		return mismatch(r.Name, rr.From, stable.Revision)
	}
	rr.Stable = stable
	return nil
}

// mismatch says that a stored revision does not compile here to what it was stored as.
func mismatch(rule string, rev *rollout.Revision, got string) error {
	return fmt.Errorf("rule %q: revision %d (%s) compiles here as revision %s: what decides a revision besides the rule's text differs from the controller's (the rule's origin, when it came from a ConfigMap found by a selector; the conditions it shares with other rules; --max-children): read the rules where the controller reads them (--rules-configmap, --rules-configmap-selector, --rules)",
		rule, rev.Number, rev.Hash, got)
}

// Planned is the rule set plan evaluates: the current revisions, but for a rule held at
// the revision it was rolled back to, that revision, which every parent runs.
func (l *Loaded) Planned() *rules.RuleSet {
	if l.Running == nil {
		return l.Set
	}
	set := *l.Set
	set.Rules = slices.Clone(l.Set.Rules)
	for i, r := range set.Rules {
		if rr := l.Running[r.Name]; rr != nil && rr.Held() && rr.Stable != nil {
			set.Rules[i] = rr.Stable
		}
	}
	return &set
}

// HoldRolledBack finds the rules, read from files or ConfigMaps, that the controller
// holds at an older revision: a rule whose text is its current revision, which was
// rolled back, runs the revision it was rolled back to until its text changes. Planned
// (plan) and version (trace) then evaluate that revision for them, as for the running
// revisions. Revisions that cannot be listed leave the rules as written, and warn says so.
func (l *Loaded) HoldRolledBack(ctx context.Context, cfg *rest.Config, idf *clikit.IdentityFlags, id *rules.Identity, warn func(string)) error {
	store, err := RevisionStore(cfg, idf, id)
	if err != nil {
		return err
	}
	byRule, err := ListRevisions(ctx, store)
	if err != nil {
		warn(fmt.Sprintf("warning: a rule held after a rollback is evaluated as written: %v", err))
		return nil
	}
	var errs []error
	for _, r := range l.Set.Rules {
		if len(byRule[r.Name]) == 0 {
			continue
		}
		revs, err := store.Decode(byRule[r.Name])
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %q: %w", r.Name, err))
			continue
		}
		cur := rollout.Current(revs)
		if cur == nil || cur.Hash != r.Revision || cur.Phase != rollout.RolledBack || !cur.Proven {
			continue // the controller runs the text (an edit starts a new rollout)
		}
		rr := &RunningRule{Revs: revs, Cur: cur}
		if err := compileFrom(l.Set, r, rr); err != nil {
			errs = append(errs, err)
			continue
		}
		if l.Running == nil {
			l.Running = map[string]*RunningRule{}
		}
		l.Running[r.Name] = rr
	}
	return errors.Join(errs...)
}

// WarnTo returns a warn function that writes each warning as a line of w.
func WarnTo(w io.Writer) func(string) {
	return func(s string) { fmt.Fprintln(w, s) }
}
