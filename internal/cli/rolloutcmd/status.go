package rolloutcmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/revisions"
	"github.com/kubecel/kubecel/internal/rollout"
)

// maxFailing is how many parents that are not healthy status names.
const maxFailing = 10

// StatusOptions are rollout status's flags.
type StatusOptions struct {
	Options
	// Watch prints each change until the rollout is no longer Progressing.
	Watch bool
	// Interval is how often a watch reads the revision and its parents.
	Interval time.Duration
	// Timeout ends a watch with status 1 when it passes first; 0 for none.
	Timeout time.Duration
}

// print writes the status of the current revision.
// Status prints where the rollout of rule's current revision stands on s.Out; with
// o.watch, a line at each change until it is no longer Progressing.
func Status(ctx context.Context, o *StatusOptions, rule string, s clikit.Streams) error {
	c, err := o.connect(ctx, false)
	if err != nil {
		return err
	}
	if o.Watch {
		return c.watch(ctx, s.Out, rule, o.Interval, o.Timeout)
	}
	v, err := c.view(ctx, rule)
	if err != nil {
		return err
	}
	return v.print(s.Out)
}

func (v *rolloutView) print(w io.Writer) error {
	cur := v.cur
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "%-10s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	line("Rule", "%s", v.rule)
	line("Revision", "%d (%s)", cur.Number, cur.Hash)
	line("Phase", "%s", cur.Phase)
	if cur.Phase == rollout.Progressing || cur.Phase == rollout.Paused {
		step := revisions.StepText(cur.State)
		if !cur.StepStarted.IsZero() {
			step += ", started " + cur.StepStarted.UTC().Format(time.RFC3339)
		}
		if !cur.HealthySince.IsZero() {
			step += ", healthy since " + cur.HealthySince.UTC().Format(time.RFC3339)
		}
		line("Step", "%s", step)
	}
	if cur.From != "" {
		line("From", "%s", revisions.FromText(v.revs, cur.From))
	}
	if cur.Phase == rollout.RolledBack {
		line("Held", "at %s until the rule's text changes", revisions.FromText(v.revs, cur.From))
	}
	switch {
	case !v.parents:
		line("Parents", "unknown: the revision does not say where its parents are")
	case cur.From != "":
		line("Parents", "%d: %d at revision %d, %d at %s%s", v.total, v.atCur, cur.Number, v.atFrom, shortFrom(v.revs, cur.From), elsewhere(v.total-v.atCur-v.atFrom))
	default:
		line("Parents", "%d: %d at revision %d%s", v.total, v.atCur, cur.Number, elsewhere(v.total-v.atCur))
	}
	if v.parents && (cur.Phase == rollout.Progressing || cur.Phase == rollout.Paused) {
		members := fmt.Sprintf("%d in the steps taken", v.members)
		if len(v.failing) > 0 {
			members += fmt.Sprintf(", %d not healthy:", len(v.failing))
		} else {
			members += ", all healthy"
		}
		line("Members", "%s", members)
		for i, f := range v.failing {
			if i == maxFailing {
				fmt.Fprintf(&b, "  and %d more\n", len(v.failing)-maxFailing)
				break
			}
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	if cur.Message != "" {
		line("Message", "%s", cur.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shortFrom names the revision rolled from by number ("revision 2"), or by hash when it
// is no longer stored.
func shortFrom(revs []*rollout.Revision, hash string) string {
	if r := rollout.Find(revs, hash); r != nil {
		return fmt.Sprintf("revision %d", r.Number)
	}
	return "revision " + hash
}

func elsewhere(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d at neither (not reconciled yet, or failing)", n)
}

// summary is the one line --watch prints at each change.
func (v *rolloutView) summary() string {
	cur := v.cur
	s := fmt.Sprintf("rule %s: %s is %s", v.rule, revisions.Text(cur), cur.Phase)
	at, atN := cur.Number, v.atCur
	switch cur.Phase {
	case rollout.Progressing, rollout.Paused:
		s += " at step " + revisions.StepText(cur.State)
	case rollout.RolledBack:
		s += fmt.Sprintf("; held at %s until the rule's text changes", revisions.FromText(v.revs, cur.From))
		if from := rollout.Find(v.revs, cur.From); from != nil {
			at, atN = from.Number, v.atFrom
		}
	}
	if v.parents {
		s += fmt.Sprintf("; %d of %d parents at revision %d", atN, v.total, at)
	}
	if cur.Message != "" && cur.Phase != rollout.Progressing {
		s += ": " + cur.Message
	}
	return s
}

// Watch prints a line at each change of a rule's current revision until its rollout is
// no longer Progressing.
func (c *rolloutClient) watch(ctx context.Context, w io.Writer, rule string, interval, timeout time.Duration) error {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	last := ""
	for {
		v, err := c.view(ctx, rule)
		if err != nil {
			return err
		}
		if s := v.summary(); s != last {
			if _, err := fmt.Fprintln(w, s); err != nil {
				return err
			}
			last = s
		}
		switch v.cur.Phase {
		case rollout.Progressing:
		case rollout.Complete:
			return nil
		default:
			return &clikit.ExitError{Code: 1}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return &clikit.ExitError{Code: 1, Err: fmt.Errorf("rule %q: %s is still Progressing at step %s after --timeout %s", rule, revisions.Text(v.cur), revisions.StepText(v.cur.State), timeout)}
		case <-time.After(interval):
		}
	}
}
