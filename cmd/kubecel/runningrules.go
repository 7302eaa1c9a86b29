package main

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

// runningRule is one rule of the installation, as its revisions say.
type runningRule struct {
	// revs are the rule's stored revisions, oldest first; cur is the current one.
	revs []*rollout.Revision
	cur  *rollout.Revision
	// from is the revision cur rolls from (Progressing, Paused) or is held at
	// (RolledBack), when it is stored; stable is it compiled as the controller runs it
	// for the parents the rollout has not moved (nil when from is).
	from   *rollout.Revision
	stable *rules.Rule
}

// held reports whether every parent runs the revision rolled back to.
func (rr *runningRule) held() bool { return rr.cur.Phase == rollout.RolledBack }

// rolling reports whether the parents are split between cur and from.
func (rr *runningRule) rolling() bool {
	return rr.stable != nil && (rr.cur.Phase == rollout.Progressing || rr.cur.Phase == rollout.Paused)
}

// loadRunning loads the current revisions of the installation's rules, after checking
// their proofs with its key.
func loadRunning(ctx context.Context, env loadEnv) (*loadedRules, error) {
	id, err := env.identity.load(ctx, env.cfg, identity.ReadOnly, false)
	if err != nil {
		return nil, err
	}
	store, err := revisionStore(env.cfg, env.identity, id)
	if err != nil {
		return nil, err
	}
	byRule, err := listRevisions(ctx, store)
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
	rs, err := rules.LoadDocuments(docs, env.opts)
	if err != nil {
		return nil, fmt.Errorf("the installation's running revisions do not load here (were CRD schemas changed?): %w", err)
	}
	if err := compileStable(rs, running); err != nil {
		return nil, err
	}
	return &loadedRules{rs: rs, from: runningFrom(store), cluster: true, running: running, id: id}, nil
}

// runningFrom names the installation's revisions in the output.
func runningFrom(store *rollout.Store) string {
	return fmt.Sprintf("the running revisions of installation %q (%s)", store.Installation, store.Namespace)
}

// listRevisions reads every revision of the installation's rules, by rule.
func listRevisions(ctx context.Context, store *rollout.Store) (map[string][]*appsv1.ControllerRevision, error) {
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
func currentRevisions(store *rollout.Store, byRule map[string][]*appsv1.ControllerRevision) (map[string]*runningRule, []rules.Document, error) {
	running := map[string]*runningRule{}
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
			errs = append(errs, unproven(store, name, "current revision", cur))
			continue
		}
		data, err := ruleSetOf(cur.Document)
		if err != nil {
			errs = append(errs, fmt.Errorf("rule %q: revision %d (%s): %w", name, cur.Number, cur.Hash, err))
			continue
		}
		running[name] = &runningRule{revs: revs, cur: cur}
		docs = append(docs, rules.Document{Source: fmt.Sprintf("revision %d of rule %s", cur.Number, name), Data: data})
	}
	return running, docs, errors.Join(errs...)
}

// unproven refuses a revision whose proof is not the installation's.
func unproven(store *rollout.Store, rule, which string, rev *rollout.Revision) error {
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
func compileStable(rs *rules.RuleSet, running map[string]*runningRule) error {
	var errs []error
	for _, r := range rs.Rules {
		rr := running[r.Name]
		if rr == nil {
			errs = append(errs, fmt.Errorf("rule %q: a revision of another rule holds it", r.Name))
			continue
		}
		if r.Revision != rr.cur.Hash {
			errs = append(errs, mismatch(r.Name, rr.cur, r.Revision))
			continue
		}
		errs = append(errs, compileFrom(rs, r, rr))
	}
	return errors.Join(errs...)
}

// compileFrom compiles the revision a rule's current one rolls from (or is held at) as
// the controller runs it, into rr.stable; nothing when there is none.
func compileFrom(rs *rules.RuleSet, r *rules.Rule, rr *runningRule) error {
	switch rr.cur.Phase {
	case rollout.Progressing, rollout.Paused, rollout.RolledBack:
	default:
		return nil
	}
	rr.from = rollout.Find(rr.revs, rr.cur.From)
	switch {
	case rr.from == nil && rr.held():
		return fmt.Errorf("rule %q: revision %d (%s) was rolled back to revision %s, which is no longer stored", r.Name, rr.cur.Number, rr.cur.Hash, rr.cur.From)
	case rr.from == nil:
		return nil // its parents not moved yet are shown at the current revision
	case !rr.from.Proven:
		return fmt.Errorf("rule %q: its revision %d (%s), which revision %d rolls from, does not carry the installation's proof: it was not stored by this installation, so it is not read as the installation's rules",
			r.Name, rr.from.Number, rr.from.Hash, rr.cur.Number)
	}
	stable, err := engine.StableVersion(rs, r, rr.from)
	if err != nil {
		return err
	}
	if stable.Revision != rr.from.Hash {
		return mismatch(r.Name, rr.from, stable.Revision)
	}
	rr.stable = stable
	return nil
}

// mismatch says that a stored revision does not compile here to what it was stored as.
func mismatch(rule string, rev *rollout.Revision, got string) error {
	return fmt.Errorf("rule %q: revision %d (%s) compiles here as revision %s: what decides a revision besides the rule's text differs from the controller's (the rule's origin, when it came from a ConfigMap found by a selector; the conditions it shares with other rules; --max-children): read the rules where the controller reads them (--rules-configmap, --rules-configmap-selector, --rules)",
		rule, rev.Number, rev.Hash, got)
}

// planned is the rule set plan evaluates: the current revisions, but for a rule held at
// the revision it was rolled back to, that revision, which every parent runs.
func (l *loadedRules) planned() *rules.RuleSet {
	if l.running == nil {
		return l.rs
	}
	set := *l.rs
	set.Rules = slices.Clone(l.rs.Rules)
	for i, r := range set.Rules {
		if rr := l.running[r.Name]; rr != nil && rr.held() && rr.stable != nil {
			set.Rules[i] = rr.stable
		}
	}
	return &set
}

// holdRolledBack finds the rules, read from files or ConfigMaps, that the controller
// holds at an older revision: a rule whose text is its current revision, which was
// rolled back, runs the revision it was rolled back to until its text changes. planned
// (plan) and version (trace) then evaluate that revision for them, as for the running
// revisions. Revisions that cannot be listed leave the rules as written, and warn says so.
func (l *loadedRules) holdRolledBack(ctx context.Context, cfg *rest.Config, idf *identityFlags, id *rules.Identity, warn func(string)) error {
	store, err := revisionStore(cfg, idf, id)
	if err != nil {
		return err
	}
	byRule, err := listRevisions(ctx, store)
	if err != nil {
		warn(fmt.Sprintf("warning: a rule held after a rollback is evaluated as written: %v", err))
		return nil
	}
	var errs []error
	for _, r := range l.rs.Rules {
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
		rr := &runningRule{revs: revs, cur: cur}
		if err := compileFrom(l.rs, r, rr); err != nil {
			errs = append(errs, err)
			continue
		}
		if l.running == nil {
			l.running = map[string]*runningRule{}
		}
		l.running[r.Name] = rr
	}
	return errors.Join(errs...)
}

// warnTo returns a warn function that writes each warning as a line of w.
func warnTo(w io.Writer) func(string) {
	return func(s string) { fmt.Fprintln(w, s) }
}
