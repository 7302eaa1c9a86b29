package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/rules"
)

// The rules-edit phase (--edit), on the controller of the other phases once the update
// phase is done: the rules file the controller runs is rewritten, and each edit is timed
// until every parent is at it. An edit adds a value to every parent's config child (data
// key "edit") and to its status (field "edit"), so that each edit costs one child apply
// and one status apply per parent.
//
//  1. immediate: the rule without a rollout policy, edit value "1"; until every config
//     child and every parent's status show it (Ready and Synced at its generation);
//  2. the policy (timed, not compared): edit value "2" with rolloutPolicy, until every
//     parent is at it and its Synced condition names the revision, and the stored
//     revision is Complete. It is an edit of its own, not the policy alone: the policy
//     alone does not change the rule's revision, whose stored document, without the
//     policy, is what a rollout from it runs on the parents not yet reached, and that
//     writes their Synced condition without the revision (one more status write each);
//  3. rollout: edit value "3" with the policy, rolling from the revision of 2; until
//     every config child and status show it and every parent's Synced condition names
//     the same revision, a new one. The stored revision's phase is then read (it
//     should be Complete).
//
// Times run from the controller's log line of the reload ("Loaded rules"; the earliest
// of the replicas'), and, for comparison, from the moment the bench wrote the file
// (the controller re-reads it every 2 s). Writes are counted from the audit log as in
// convergence: from the file write until the controller sent nothing for 3 s.

// rolloutPolicy is the rollout edit's policy: the steps, no pause.
const rolloutPolicy = `    rollout: {steps: ["1%", "10%", "50%", "100%"], pause: 0s, progressDeadline: 10m}` + "\n"

// rolloutSteps are rolloutPolicy's steps, for the times at which each was reached.
var rolloutSteps = []float64{1, 10, 50, 100}

// Where the edit goes in the bench's rules: after the config child's last data line,
// and after the status block's last field (the end of the file).
const (
	editChildAnchor  = "\n            port: ${string(parent.spec.port)}\n"
	editStatusAnchor = "\n        image: ${parent.spec.image}\n"
)

// editedRules returns base with value in the config child's data and in the status, and
// with rolloutPolicy when withPolicy.
func editedRules(base []byte, value string, withPolicy bool) ([]byte, error) {
	out := base
	for _, a := range []struct{ anchor, add string }{
		{editChildAnchor, fmt.Sprintf("            edit: %q\n", value)},
		{editStatusAnchor, fmt.Sprintf("        edit: %q\n", value)},
	} {
		if bytes.Count(out, []byte(a.anchor)) != 1 {
			return nil, fmt.Errorf("the bench's rules no longer hold the line %q once", strings.TrimSpace(a.anchor))
		}
		out = bytes.Replace(out, []byte(a.anchor), []byte(a.anchor+a.add), 1)
	}
	if !bytes.HasSuffix(out, []byte(editStatusAnchor+fmt.Sprintf("        edit: %q\n", value))) {
		return nil, fmt.Errorf("the bench's rules no longer end with the status field %q", strings.TrimSpace(editStatusAnchor))
	}
	if withPolicy {
		out = append(out, rolloutPolicy...)
	}
	return out, nil
}

// editRun is what one timed edit took.
type editRun struct {
	// took is from the reload's log line until every parent was at the edit; sinceWrite
	// from the file write; reload from the write until the log line.
	took, sinceWrite, reload time.Duration
	writes                   writeCounts
	// reloadAt is when the first replica logged the reload.
	reloadAt time.Time
}

func (e editRun) perParent(n int) float64 { return float64(e.writes.total()) / float64(n) }

// editResult is what the phase measured.
type editResult struct {
	immediate, rollout editRun
	// policy is the untimed edit that adds the policy (from the reload until every
	// parent names its revision), with its writes.
	policy editRun
	// from and to are the revisions the rollout went from and to; phase is to's stored
	// phase once every parent was at it.
	from, to, phase string
	// steps are the times, from the reload, at which the parents at the new revision
	// first reached each step's share (rolloutSteps).
	steps []time.Duration
}

// ratio is the rollout's time over the immediate edit's, both from the reload.
func (e *editResult) ratio() float64 { return over(e.rollout.took, e.immediate.took) }

// editPhase runs the rules-edit phase on the controller of the other phases.
type editPhase struct{ b *bench }

// run runs the phase.
func (e editPhase) run(ctx context.Context) (*editResult, error) {
	b := e.b
	rulesPath := filepath.Join(b.cfg.dir, "rules.yaml")
	rule, err := benchRule()
	if err != nil {
		return nil, err
	}
	res := &editResult{}
	data, err := editedRules(rulesYAML, "1", false)
	if err != nil {
		return nil, err
	}
	logf("edit: immediate: the rules without a policy, edit value 1")
	if res.immediate, err = e.editTo(ctx, rulesPath, data, "immediate edit", func() (bool, string) {
		return b.watch.edited("1", rule, func(string) bool { return true }, nil)
	}); err != nil {
		return nil, err
	}
	logf("edit: immediate: %s after the reload (%s after the write); %.2f writes per parent (%s)",
		secs(res.immediate.took), secs(res.immediate.sinceWrite), res.immediate.perParent(b.cfg.n), res.immediate.writes)

	if data, err = editedRules(rulesYAML, "2", true); err != nil {
		return nil, err
	}
	logf("edit: adding the rollout policy with edit value 2 (not timed against the immediate edit)")
	if res.policy, err = e.editTo(ctx, rulesPath, data, "rollout policy", func() (bool, string) {
		return b.watch.edited("2", rule, func(rev string) bool { return rev != "" }, &res.from)
	}); err != nil {
		return nil, err
	}
	logf("edit: policy: every parent at revision %s after %s, stored phase %s; %.2f writes per parent (%s)",
		res.from, secs(res.policy.took), revisionPhase(ctx, b.kube, res.from), res.policy.perParent(b.cfg.n), res.policy.writes)

	if data, err = editedRules(rulesYAML, "3", true); err != nil {
		return nil, err
	}
	logf("edit: rollout: edit value 3 with steps %v%%, no pause", rolloutSteps)
	reached := stepClock{steps: rolloutSteps}
	if res.rollout, err = e.editTo(ctx, rulesPath, data, "rollout edit", func() (bool, string) {
		ok, progress := b.watch.edited("3", rule, func(rev string) bool { return rev != "" && rev != res.from }, &res.to)
		reached.see(b.watch.at(rule, res.from), b.cfg.n)
		return ok, progress
	}); err != nil {
		return nil, err
	}
	res.steps = reached.since(res.rollout.reloadAt)
	res.phase = revisionPhase(ctx, b.kube, res.to)
	logf("edit: rollout: %s after the reload (%s after the write), %.2fx the immediate edit; revision %s -> %s, stored phase %s; steps reached at %s; %.2f writes per parent (%s)",
		secs(res.rollout.took), secs(res.rollout.sinceWrite), res.ratio(), res.from, res.to, res.phase, stepTimes(res.steps), res.rollout.perParent(b.cfg.n), res.rollout.writes)
	return res, nil
}

// benchRule is the name of the bench's rule, under which parents record their revision.
func benchRule() (string, error) {
	rs, err := rules.Load(rulesYAML, rules.Options{})
	if err != nil {
		return "", fmt.Errorf("testdata/rules.yaml: %w", err)
	}
	return rs.Rules[0].Name, nil
}

// editTo writes data to the rules file, waits until every replica logged the reload and
// done holds, then until the controller is quiet, and returns the times and writes.
func (e editPhase) editTo(ctx context.Context, path string, data []byte, what string, done func() (bool, string)) (editRun, error) {
	b := e.b
	var run editRun
	loads := make([]int, len(b.ctrls))
	for i, c := range b.ctrls {
		n, _, err := reloads(c.log.Name())
		if err != nil {
			return run, err
		}
		loads[i] = n
	}
	if err := b.audit.read(); err != nil {
		return run, err
	}
	writes0 := b.audit.snapshot()
	written := time.Now()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return run, err
	}
	err := waitFor(ctx, b.cfg.timeout, what, done)
	finished := time.Now()
	if err != nil {
		return run, err
	}
	var reload time.Time
	for i, c := range b.ctrls {
		n, at, err := reloads(c.log.Name())
		if err != nil {
			return run, err
		}
		if n <= loads[i] {
			return run, fmt.Errorf("%s: %s reached, but %s logged no reload of the rules (log: %s)", what, what, c.name, c.log.Name())
		}
		if reload.IsZero() || at.Before(reload) {
			reload = at
		}
	}
	run.took, run.sinceWrite, run.reload, run.reloadAt = finished.Sub(reload), finished.Sub(written), reload.Sub(written), reload
	if err := b.quiet(ctx); err != nil {
		return run, err
	}
	run.writes = b.audit.snapshot().minus(writes0)
	return run, nil
}

// reloadLine marks the controller's log line of a rules reload.
const reloadLine = `"Loaded rules"`

// reloads counts the reload lines of a controller's log and returns the time of the
// last one.
func reloads(path string) (int, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer f.Close()
	n, last := 0, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, reloadLine) {
			n, last = n+1, line
		}
	}
	if err := sc.Err(); err != nil {
		return 0, time.Time{}, err
	}
	if n == 0 {
		return 0, time.Time{}, nil
	}
	at, err := klogTime(last, time.Now())
	return n, at, err
}

// klogTime reads the time of a klog text line ("I1125 23:45:01.123456 ..."), written in
// local time without a year: the year is now's, or the one before when that would put
// the line more than a day after now.
func klogTime(line string, now time.Time) (time.Time, error) {
	f := strings.Fields(line)
	if len(f) < 2 || len(f[0]) != 5 {
		return time.Time{}, fmt.Errorf("not a klog line: %q", line)
	}
	at, err := time.ParseInLocation("2006 0102 15:04:05.000000", fmt.Sprintf("%d %s %s", now.Year(), f[0][1:], f[1]), now.Location())
	if err != nil {
		return time.Time{}, fmt.Errorf("not a klog line: %q: %w", line, err)
	}
	if at.After(now.Add(24 * time.Hour)) {
		at = at.AddDate(-1, 0, 0)
	}
	return at, nil
}

// edited: every config child carries value, and every parent is Ready and Synced at
// its generation with value in its status and a revision of rule that keep accepts,
// the same for all; into, when not nil, gets that revision.
func (t *tracker) edited(value, rule string, keep func(string) bool, into *string) (bool, string) {
	children := 0
	for _, o := range t.configs.GetStore().List() {
		if o.(*corev1.ConfigMap).Data["edit"] == value {
			children++
		}
	}
	parents, revs := 0, map[string]int{}
	for _, o := range t.parents.GetStore().List() {
		p := o.(*unstructured.Unstructured)
		got, _, _ := unstructured.NestedString(p.Object, "status", "edit")
		rev := rollout.RevisionOf(p, rule)
		if got == value && parentConverged(p) && keep(rev) {
			parents++
			revs[rev]++
		}
	}
	progress := fmt.Sprintf("%d/%d config children and %d/%d parents at edit %s (revisions %v)", children, t.n, parents, t.n, value, revs)
	if children != t.n || parents != t.n || len(revs) != 1 {
		return false, progress
	}
	if into != nil {
		for rev := range revs {
			*into = rev
		}
	}
	return true, progress
}

// at counts the parents that record a revision of rule other than from.
func (t *tracker) at(rule, from string) int {
	n := 0
	for _, o := range t.parents.GetStore().List() {
		if rev := rollout.RevisionOf(o.(*unstructured.Unstructured), rule); rev != "" && rev != from {
			n++
		}
	}
	return n
}

// stepClock notes when the parents at the new revision first reached each step's
// share of the parents; steps are the policy's, in percent.
type stepClock struct {
	steps   []float64
	reached []time.Time
}

// see notes that at of n parents are at the new revision now.
func (s *stepClock) see(at, n int) {
	now := time.Now()
	for len(s.reached) < len(s.steps) && at >= rollout.Members(s.steps, len(s.reached)+1, n) {
		s.reached = append(s.reached, now)
	}
}

// since returns the times at which each step was reached, from start.
func (s *stepClock) since(start time.Time) []time.Duration {
	var out []time.Duration
	for _, t := range s.reached {
		out = append(out, t.Sub(start))
	}
	return out
}

// stepTimes is "0.3 / 1.2 / 2.0 / 3.1 s".
func stepTimes(steps []time.Duration) string {
	if len(steps) == 0 {
		return "none"
	}
	parts := make([]string, len(steps))
	for i, d := range steps {
		parts[i] = fmt.Sprintf("%.1f", d.Seconds())
	}
	return strings.Join(parts, " / ") + " s"
}

// revisionPhase reads the stored phase of the revision hash (of any rule: the hash
// tells them apart), waiting up to a minute for it to be Complete; it returns the phase
// last read ("?" when none).
func revisionPhase(ctx context.Context, kube kubernetes.Interface, hash string) string {
	phase := "?"
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		list, err := kube.AppsV1().ControllerRevisions(controlplane.InstallNamespace).List(ctx, metav1.ListOptions{LabelSelector: rollout.LabelRevision + "=" + hash})
		if err != nil {
			logf("edit: revision %s: %v", hash, err)
		} else if len(list.Items) == 1 {
			phase = list.Items[0].Annotations[rollout.AnnotationPhase]
			if phase == string(rollout.Complete) {
				return phase
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	return phase
}
