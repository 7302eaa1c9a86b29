package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine"
	engineplan "github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/internal/crdschema"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// Options are plan's flags.
type Options struct {
	// Rules says where the rules to plan come from (by default, the installation's
	// running revisions).
	Rules rulesfrom.Flags
	// Cluster connects to the cluster to plan against.
	Cluster *clikit.ClusterFlags
	// Rule plans only this rule, when set.
	Rule string
	// Namespace plans only the parents in this namespace, when set.
	Namespace string
	// Output is the format: text, json or yaml.
	Output string
	// SyncTimeout bounds the wait for the cluster's objects to be listed.
	SyncTimeout time.Duration
	// Limits load the rules as the controller loads them.
	Limits clikit.LoadLimits
	// Identity names the installation whose key proves its children and revisions.
	Identity clikit.IdentityFlags
}

// Run plans the rules against the cluster without changing it and prints the plan on
// s.Out (progress on s.ErrOut). It exits with status 2 when the plan has changes, 1 when
// a parent cannot be planned completely or the rules do not load.
func Run(ctx context.Context, o *Options, s clikit.Streams) error {
	// The engine's progress lines are noise here; -v=1 shows them. Errors still show.
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).V(1))
	got, err := o.plan(ctx, s.In, s.ErrOut)
	if err != nil && got.plans == nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	out := s.Out
	var sum planSummary
	if o.Output != "text" {
		sum, err = writeDataPlan(out, o.Output, got, err)
	} else {
		if got.header != "" {
			fmt.Fprintln(out, got.header)
			fmt.Fprintln(out)
		}
		writeTextAPIs(out, got.apis, colorFor(out))
		writeTextRollouts(out, got.rollouts, colorFor(out))
		sum = writeTextPlan(out, got.plans, got.dropped, got.apis, colorFor(out))
	}
	switch {
	case err != nil:
		return &clikit.ExitError{Code: 1, Err: err}
	case sum.errors > 0:
		return &clikit.ExitError{Code: 1, Err: fmt.Errorf("%d %s could not be planned completely", sum.failed, clikit.Plural(sum.failed, "parent", "parents"))}
	case sum.changes() > 0:
		return &clikit.ExitError{Code: 2}
	}
	return nil
}

// planProgressEvery is how often plan says on stderr that it still waits for the caches.
const planProgressEvery = 3 * time.Second

// planned is what plan found: every parent's plan, the rules the new rules drop and
// how the rules with a rollout policy would reach their parents.
type planned struct {
	plans    []engineplan.ParentPlan
	dropped  []engineplan.DroppedRule
	rollouts []planRollout
	// apis are what the rules' api blocks would do to their CRDs.
	apis []engineplan.APIChange
	// from names where the rules came from; header is the text's first line, when the
	// Cluster.
	from, header string
}

// plan loads the rules, lets a dry-run controller list the cluster and plans every
// parent once, and (without --rule) finds the rules that the new rules drop. The
// controller's worker loop never runs.
func (o *Options) plan(ctx context.Context, stdin io.Reader, stderr io.Writer) (planned, error) {
	plans, dropped, loaded, apis, err := o.planParents(ctx, stdin, stderr)
	if loaded == nil || (plans == nil && apis == nil) {
		return planned{plans: plans, dropped: dropped}, err
	}
	if plans == nil {
		plans = []engineplan.ParentPlan{} // the rules' apis are the plan
	}
	got := planned{plans: plans, dropped: dropped, apis: apis, from: loaded.From, header: loaded.Header()}
	cfg, cfgErr := o.Cluster.RESTConfig()
	ref, refErr := o.Identity.SecretRef()
	if cfgErr == nil && refErr == nil {
		// The current revisions, not the revision a rule is held at: what they roll to.
		got.rollouts = planRollouts(ctx, cfg, rollout.Store{Namespace: ref.Namespace, Installation: ref.Installation}, loaded.Set, o.Rule, plans)
	}
	return got, err
}

// planParents plans every parent of the rules, finds the rules they drop, and judges
// the CRDs of the rules' apis.
func (o *Options) planParents(ctx context.Context, stdin io.Reader, stderr io.Writer) ([]engineplan.ParentPlan, []engineplan.DroppedRule, *rulesfrom.Loaded, []engineplan.APIChange, error) {
	if err := rulesfrom.CheckPaths(o.Rules.Files); err != nil {
		return nil, nil, nil, nil, err
	}
	cfg, err := o.Cluster.RESTConfig()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	// Without this, an API server that cannot be reached shows only as rules that do not
	// run because their kinds are not served.
	if err := clikit.Reach(cfg); err != nil {
		return nil, nil, nil, nil, err
	}
	cfg.UserAgent = "kubecel-plan"
	// One list per served resource (objects left over in kinds the rules no longer
	// produce) and one dry-run apply per changed object: client-go's default of 5
	// requests per second would make a plan of a real cluster crawl.
	cfg.QPS, cfg.Burst = 100, 200
	opts := o.Limits.Options()
	if schemas, err := crdschema.FromCluster(ctx, cfg); err == nil {
		opts.Schemas = schemas
	} else {
		klog.FromContext(ctx).Error(err, "Cannot read CRD schemas; rules are checked without them")
	}
	loaded, err := o.Rules.Load(ctx, rulesfrom.Env{Stdin: stdin, Config: cfg, Options: opts, Identity: &o.Identity,
		Warn: func(s string) { fmt.Fprintln(stderr, s) }})
	if err != nil {
		return nil, nil, nil, nil, err // each problem names its file and line
	}
	if o.Rule != "" && !slices.ContainsFunc(loaded.Set.Rules, func(r *rules.Rule) bool { return r.Name == o.Rule }) {
		return nil, nil, nil, nil, fmt.Errorf("%s has no rule %q", loaded.From, o.Rule)
	}
	// The installation's key tells its children from look-alikes; plan only reads it.
	id, err := loaded.Identity(ctx, cfg, &o.Identity)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if !o.Rules.Running() {
		if err := loaded.HoldRolledBack(ctx, cfg, &o.Identity, id, rulesfrom.WarnTo(stderr)); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	rs := loaded.Planned()
	ctrl, err := engine.New(cfg, engine.Options{DryRun: true, Workers: 1, Identity: id})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	defer ctrl.Close()
	ctrl.SetRules(ctx, rs)
	apis, err := ctrl.APIs(ctx, o.selected(rs))
	if err != nil {
		return nil, nil, nil, nil, err
	}
	progress := clikit.WaitProgress(stderr, planProgressEvery, fmt.Sprintf("the caches of %d %s to sync", len(rs.Rules), clikit.Plural(len(rs.Rules), "rule", "rules")))
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, o.SyncTimeout, true, func(context.Context) (bool, error) {
		ready, _ := ctrl.Ready()
		if !ready {
			progress(time.Now())
		}
		return ready, nil
	})
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("list the cluster's parents and children: %w", err)
	}
	plans, err := ctrl.Plan(ctx, engine.PlanOptions{Rule: o.Rule, Namespace: o.Namespace})
	if o.Rule != "" || (err != nil && plans == nil) {
		return plans, nil, loaded, apis, err
	}
	dropped, droppedErr := ctrl.DroppedRules(ctx, o.Namespace)
	return plans, dropped, loaded, apis, errors.Join(err, droppedErr)
}

// planSummary counts a plan's changes.
type planSummary struct {
	Create    int `json:"create"`
	Update    int `json:"update"`
	Prune     int `json:"prune"`
	Release   int `json:"release,omitempty"`
	Status    int `json:"status"`
	Finalizer int `json:"finalizer"`
	Parents   int `json:"parents"`
	Changed   int `json:"changedParents"`
	Dropped   int `json:"droppedRules,omitempty"`
	APIs      int `json:"apis,omitempty"`
	errors    int
	failed    int
	refused   int // rules' apis the controller would refuse
}

func (s planSummary) changes() int {
	return s.Create + s.Update + s.Prune + s.Release + s.Status + s.Finalizer + s.Dropped + s.APIs
}

func summarize(plans []engineplan.ParentPlan, dropped []engineplan.DroppedRule, apis []engineplan.APIChange) planSummary {
	s := planSummary{Dropped: len(dropped)}
	for _, a := range apis {
		if a.Changes() {
			s.APIs++
		}
		if a.Refused() {
			s.refused++
		}
	}
	for _, p := range plans {
		s.Parents++
		if len(p.Changes) > 0 {
			s.Changed++
		}
		if len(p.Errors) > 0 {
			s.errors += len(p.Errors)
			s.failed++
		}
		for _, ch := range p.Changes {
			switch ch.Action {
			case engineplan.ActionCreate:
				s.Create++
			case engineplan.ActionUpdate:
				s.Update++
			case engineplan.ActionPrune:
				s.Prune++
			case engineplan.ActionRelease:
				s.Release++
			case engineplan.ActionStatus:
				s.Status++
			case engineplan.ActionFinalizer:
				s.Finalizer++
			}
		}
	}
	return s
}

// palette colours a line by its marker; the zero value prints plain text.
type palette struct{ on bool }

func colorFor(w io.Writer) palette {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return palette{}
	}
	fi, err := f.Stat()
	return palette{on: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

func (p palette) paint(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// line colours one line by its first character.
func (p palette) line(s string) string {
	switch t := strings.TrimLeft(s, " "); {
	case t == "":
		return s
	case t[0] == '+':
		return p.paint("32", s)
	case t[0] == '-':
		return p.paint("31", s)
	case t[0] == '~':
		return p.paint("33", s)
	case t[0] == '!':
		return p.paint("1;31", s)
	}
	return s
}

// writeTextPlan prints the parents that would change or failed, then a summary line.
func writeTextPlan(w io.Writer, plans []engineplan.ParentPlan, dropped []engineplan.DroppedRule, apis []engineplan.APIChange, p palette) planSummary {
	for _, pp := range plans {
		if len(pp.Changes) == 0 && len(pp.Errors) == 0 && !pp.MissingRefs {
			continue
		}
		fmt.Fprintln(w, p.paint("1", fmt.Sprintf("rule %s: %s", pp.Rule, pp.Parent)))
		for _, r := range pp.Refs {
			fmt.Fprintln(w, "  reads "+r)
		}
		for _, ch := range pp.Changes {
			for _, l := range strings.Split(ch.Text(), "\n") {
				fmt.Fprintln(w, "  "+p.line(l))
			}
		}
		for _, wt := range pp.Waiting {
			fmt.Fprintln(w, "  . "+wt+" (planned once it exists and is ready)")
		}
		for _, err := range pp.Errors {
			for i, l := range strings.Split(err.Error(), "\n") {
				if i == 0 {
					l = "! " + l
				} else {
					l = "  " + l
				}
				fmt.Fprintln(w, "  "+p.line(l))
			}
		}
		fmt.Fprintln(w)
	}
	for _, d := range dropped {
		for _, l := range strings.Split(d.Text(), "\n") {
			fmt.Fprintln(w, p.line(l))
		}
		fmt.Fprintln(w)
	}
	s := summarize(plans, dropped, apis)
	parents := fmt.Sprintf("%d %s", s.Parents, clikit.Plural(s.Parents, "parent", "parents"))
	switch {
	case s.changes() == 0 && s.errors == 0 && s.refused == 0:
		fmt.Fprintf(w, "No changes: the cluster matches the rules (%s).\n", parents)
	default:
		line := fmt.Sprintf("Plan: %d to create, %d to update, %d to prune, %d status %s", s.Create, s.Update, s.Prune, s.Status, clikit.Plural(s.Status, "change", "changes"))
		if s.Release > 0 {
			line += fmt.Sprintf(", %d to release", s.Release)
		}
		if s.Finalizer > 0 {
			line += fmt.Sprintf(", %d %s to add", s.Finalizer, clikit.Plural(s.Finalizer, "finalizer", "finalizers"))
		}
		line += fmt.Sprintf(", in %d of %s", s.Changed, parents)
		if s.APIs > 0 {
			line += fmt.Sprintf("; %d %s to apply", s.APIs, clikit.Plural(s.APIs, "CRD", "CRDs"))
		}
		if s.Dropped > 0 {
			line += fmt.Sprintf("; %d %s dropped", s.Dropped, clikit.Plural(s.Dropped, "rule", "rules"))
		}
		if s.refused > 0 {
			line += fmt.Sprintf("; %d %s refused", s.refused, clikit.Plural(s.refused, "api", "apis"))
		}
		if s.errors > 0 {
			line += fmt.Sprintf("; %d %s in %d %s", s.errors, clikit.Plural(s.errors, "error", "errors"), s.failed, clikit.Plural(s.failed, "parent", "parents"))
		}
		fmt.Fprintln(w, line+".")
	}
	return s
}

type jsonParentPlan struct {
	Rule     string               `json:"rule"`
	Parent   engineplan.ObjectRef `json:"parent"`
	Changes  []engineplan.Change  `json:"changes"`
	Waiting  []string             `json:"waiting,omitempty"`
	Refs     []string             `json:"refs,omitempty"`
	Errors   []string             `json:"errors,omitempty"`
	Deleting bool                 `json:"deleting,omitempty"`
}

// writeDataPlan prints, as JSON or YAML, every planned parent (changed or not), the
// summary and the error that stopped the plan, if any.
func writeDataPlan(w io.Writer, format string, got planned, planErr error) (planSummary, error) {
	doc := struct {
		RulesFrom    string                   `json:"rulesFrom"`
		Parents      []jsonParentPlan         `json:"parents"`
		DroppedRules []engineplan.DroppedRule `json:"droppedRules,omitempty"`
		Rollouts     []planRollout            `json:"rollouts,omitempty"`
		APIs         []engineplan.APIChange   `json:"apis,omitempty"`
		Summary      planSummary              `json:"summary"`
		Error        string                   `json:"error,omitempty"`
	}{RulesFrom: got.from, Parents: []jsonParentPlan{}, DroppedRules: got.dropped, Rollouts: got.rollouts, APIs: got.apis, Summary: summarize(got.plans, got.dropped, got.apis)}
	for _, p := range got.plans {
		jp := jsonParentPlan{Rule: p.Rule, Parent: p.Parent, Changes: p.Changes, Waiting: p.Waiting, Refs: p.Refs, Deleting: p.Deleting}
		if jp.Changes == nil {
			jp.Changes = []engineplan.Change{}
		}
		for _, err := range p.Errors {
			jp.Errors = append(jp.Errors, err.Error())
		}
		doc.Parents = append(doc.Parents, jp)
	}
	if planErr != nil {
		doc.Error = planErr.Error()
	}
	if err := clikit.PrintData(w, format, doc); err != nil {
		return doc.Summary, errors.Join(planErr, err)
	}
	return doc.Summary, planErr
}
