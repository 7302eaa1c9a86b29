package getrules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/revisions"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/rollout"
)

// Options are get rules' flags.
type Options struct {
	// Cluster connects to the cluster the installation runs in.
	Cluster *clikit.ClusterFlags
	// Identity names the installation; its Secret's namespace holds the revisions, and
	// its key proves them.
	Identity clikit.IdentityFlags
	// Output is the format: text, wide, json or yaml.
	Output string
}

// Run lists the installation's rules named (all when none is) on s.Out. A rule
// that cannot be listed is an error beside the others' rows, and exits with status 1.
func Run(ctx context.Context, o *Options, names []string, s clikit.Streams) error {
	list, err := o.get(ctx, names)
	if list == nil {
		return err
	}
	if perr := o.print(s.Out, s.ErrOut, list); perr != nil {
		return errors.Join(err, perr)
	}
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	return nil
}

// ruleList is what get rules prints.
type ruleList struct {
	Installation string    `json:"installation"`
	Namespace    string    `json:"namespace"`
	Rules        []ruleRow `json:"rules"`
}

// ruleRow is one rule: its current revision and its parents.
type ruleRow struct {
	Name     string        `json:"name"`
	Revision int64         `json:"revision"`
	Hash     string        `json:"hash"`
	Phase    rollout.Phase `json:"phase"`
	// Step and Steps are the steps taken and the policy's steps (percents).
	Step  int       `json:"step,omitempty"`
	Steps []float64 `json:"steps,omitempty"`
	// From is the revision a rollout rolls from, or a rolled-back rule is held at.
	From           *revisionRef `json:"from,omitempty"`
	Message        string       `json:"message,omitempty"`
	ParentResource string       `json:"parentResource,omitempty"`
	Created        time.Time    `json:"created,omitzero"`
	// WritesStatus is false for a rule without a status block: it writes no conditions,
	// so no parent counts as Ready, Synced or failing.
	WritesStatus bool `json:"writesStatus"`
	// Parents is nil when the revision does not say where its parents are.
	Parents *parentCounts `json:"parents,omitempty"`
}

// revisionRef names a stored revision.
type revisionRef struct {
	Revision int64  `json:"revision,omitempty"`
	Hash     string `json:"hash"`
}

// parentCounts are a rule's parents by state.
type parentCounts struct {
	Total   int `json:"total"`
	Ready   int `json:"ready"`
	Synced  int `json:"synced"`
	Failing int `json:"failing"`
	// UpToDate are at the revision that runs for them.
	UpToDate int `json:"upToDate"`
}

// get reads the installation's revisions, checks their proofs, and counts each rule's
// parents. A rule that cannot be listed is an error beside the others' rows.
func (o *Options) get(ctx context.Context, names []string) (*ruleList, error) {
	cfg, err := o.Cluster.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "kubecel-get"
	if err := clikit.Reach(cfg); err != nil {
		return nil, err
	}
	id, err := o.Identity.Load(ctx, cfg, identity.ReadOnly, false)
	if err != nil {
		return nil, err
	}
	store, err := rulesfrom.RevisionStore(cfg, &o.Identity, id)
	if err != nil {
		return nil, err
	}
	byRule, err := rulesfrom.ListRevisions(ctx, store)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	list := &ruleList{Installation: store.Installation, Namespace: store.Namespace, Rules: []ruleRow{}}
	var errs []error
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(byRule))
	}
	for _, name := range names {
		if len(byRule[name]) == 0 {
			errs = append(errs, fmt.Errorf("rule %q has no revision in namespace %s for installation %q: the rule never ran there, or runs under another installation (--installation, --identity-secret)", name, store.Namespace, store.Installation))
			continue
		}
		row, err := ruleRowOf(ctx, dyn, store, name, byRule[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		list.Rules = append(list.Rules, row)
	}
	return list, errors.Join(errs...)
}

// ruleRowOf reads one rule's row from its revisions and its parents.
func ruleRowOf(ctx context.Context, dyn dynamic.Interface, store *rollout.Store, name string, crs []*appsv1.ControllerRevision) (ruleRow, error) {
	revs, err := store.Decode(crs)
	if err != nil {
		return ruleRow{}, fmt.Errorf("rule %q: %w", name, err)
	}
	cur := rollout.Current(revs)
	if !cur.Proven {
		return ruleRow{}, rulesfrom.Unproven(store, name, "current revision", cur)
	}
	row := ruleRow{Name: name, Revision: cur.Number, Hash: cur.Hash, Phase: cur.Phase, Message: cur.Message, ParentResource: cur.ParentResource,
		WritesStatus: writesStatus(cur.Document)}
	if cur.Phase == rollout.Progressing || cur.Phase == rollout.Paused {
		row.Step, row.Steps = cur.Step, cur.Steps
	}
	if cur.Object != nil {
		row.Created = cur.Object.CreationTimestamp.UTC()
	}
	runs := cur // the revision that runs for the parents
	if cur.From != "" && cur.Phase != rollout.Complete && cur.Phase != rollout.Superseded {
		row.From = &revisionRef{Hash: cur.From}
		if from := rollout.Find(revs, cur.From); from != nil {
			row.From.Revision = from.Number
			if cur.Phase == rollout.RolledBack {
				runs = from
			}
		}
	}
	if cur.ParentResource == "" {
		return row, nil
	}
	items, err := revisions.ListParents(ctx, dyn, cur)
	if err != nil {
		return ruleRow{}, err
	}
	row.Parents = &parentCounts{Total: len(items)}
	for i := range items {
		p := &items[i]
		conds := clikit.ConditionsOf(p.Object, cur.ReadyCondition, cur.SyncedCondition)
		gen := p.GetGeneration()
		if c := clikit.FindCondition(conds, cur.ReadyCondition); c != nil && c.Status == "True" && c.ObservedGeneration == gen {
			row.Parents.Ready++
		}
		switch c := clikit.FindCondition(conds, cur.SyncedCondition); {
		case c == nil:
		case c.Status == "True" && c.ObservedGeneration == gen:
			row.Parents.Synced++
		case c.Status == "False":
			row.Parents.Failing++
		}
		if revisions.AtRevision(p, runs) {
			row.Parents.UpToDate++
		}
	}
	return row, nil
}

// writesStatus reports whether a revision's document (the rule's source as JSON) has a
// status block.
func writesStatus(document []byte) bool {
	var doc struct {
		Status json.RawMessage `json:"status"`
	}
	return json.Unmarshal(document, &doc) == nil && len(doc.Status) > 0 && string(doc.Status) != "null"
}
