package rulesource

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/rules"
)

// reload loads the current parts as one rule set and applies it. A part that fails
// (cannot be read, does not load, or makes the set fail with the others) is left at its
// last good version and reported once per version. On the first load it returns the
// error only when a part that is not optional fails; later it returns what it reported.
func (l *Loader) reload(ctx context.Context, first bool) error {
	l.reloading.Lock()
	defer l.reloading.Unlock()
	current := l.gather()
	if !first && l.unchanged(current) {
		return nil
	}
	var opts rules.Options
	if l.opts.LoadOptions != nil {
		opts = l.opts.LoadOptions(ctx)
	}
	failed := map[string]error{}
	for _, p := range current {
		if p.err != nil {
			failed[p.key] = p.err
		}
	}
	var rs *rules.RuleSet
	var firstErr, loadErr error
	opts.Previous = l.last
	for {
		set, err := rules.LoadDocuments(l.candidate(current, failed), opts)
		if err == nil {
			rs, l.last = set, set
			break
		}
		loadErr = err
		if firstErr == nil {
			firstErr = err
		}
		guilty := l.guilty(current, failed, err, first)
		if len(guilty) == 0 {
			break // even the last good versions do not load together
		}
		for _, p := range guilty {
			failed[p.key] = partError(p, err)
		}
	}
	if first {
		for _, p := range current {
			if err, bad := failed[p.key]; bad && !p.optional {
				if p.err == nil {
					return firstErr // every problem, with its place
				}
				return err
			}
		}
	}
	l.settle(ctx, current, failed)
	l.failing.Set(float64(len(failed)))
	if rs == nil {
		l.failing.Set(float64(max(len(failed), 1)))
		l.reloads.WithLabelValues("error").Inc()
		err := fmt.Errorf("the last good versions of the rules do not load together (were CRD schemas changed?): %w", loadErr)
		klog.FromContext(ctx).Error(err, "Rules reload failed; the running rules keep running")
		return err
	}
	if rs.Hash != l.applied {
		l.apply(ctx, rs, current, failed)
	}
	if first {
		return nil // the optional parts that failed are reported, and left out
	}
	var errs []error
	for _, p := range current {
		errs = append(errs, failed[p.key])
	}
	return errors.Join(errs...)
}

// candidate is the documents to load: each part at its current version, or at its last
// good one when it failed.
func (l *Loader) candidate(current []keyed, failed map[string]error) []rules.Document {
	var docs []rules.Document
	for _, p := range current {
		if _, bad := failed[p.key]; !bad {
			docs = append(docs, p.docs...)
		} else if st := l.states[p.key]; st != nil && st.goodVersion != "" {
			docs = append(docs, st.good...)
		}
	}
	return docs
}

// guilty picks the parts to fall back for a load error: among the changed parts the
// errors are in, those whose version was already refused (so that a part that never
// loaded, such as a ConfigMap repeating another's rule name, cannot block the other's
// next edit), else the changed parts the errors are in, else (a problem between parts)
// every changed part that still counts at its current version. On the first load,
// optional parts are picked before the others, so that a selector's ConfigMap that
// clashes with a named source does not stop the start.
func (l *Loader) guilty(current []keyed, failed map[string]error, err error, first bool) []keyed {
	var list rules.ErrorList
	errors.As(err, &list)
	named := map[string]bool{}
	for _, e := range list {
		named[e.Source] = true
	}
	var changed, in, refused []keyed
	for _, p := range current {
		if _, bad := failed[p.key]; bad {
			continue
		}
		st := l.states[p.key]
		if st != nil && st.goodVersion == p.version {
			continue
		}
		changed = append(changed, p)
		for _, d := range p.docs {
			if named[d.Source] {
				in = append(in, p)
				if st != nil && st.seen == p.version {
					refused = append(refused, p)
				}
				break
			}
		}
	}
	for _, set := range [][]keyed{refused, in, changed} {
		if len(set) == 0 {
			continue
		}
		if first {
			var optional []keyed
			for _, p := range set {
				if p.optional {
					optional = append(optional, p)
				}
			}
			if len(optional) > 0 {
				return optional
			}
		}
		return set
	}
	return nil
}

// partError is the part of a load error that is about p, or all of it when none is.
func partError(p keyed, err error) error {
	var list rules.ErrorList
	if !errors.As(err, &list) {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	sources := map[string]bool{}
	for _, d := range p.docs {
		sources[d.Source] = true
	}
	var own rules.ErrorList
	for _, e := range list {
		if sources[e.Source] {
			own = append(own, e)
		}
	}
	if len(own) == 0 {
		return fmt.Errorf("%s does not load together with the other rules:\n%w", p.name, err)
	}
	return own
}

// settle records what each part became, and reports each new failing version once.
func (l *Loader) settle(ctx context.Context, current []keyed, failed map[string]error) {
	next := make(map[string]*partState, len(current))
	for _, p := range current {
		st := l.states[p.key]
		if st == nil {
			st = &partState{}
		}
		if err, bad := failed[p.key]; !bad {
			st.good, st.goodVersion = p.docs, p.version
		} else if st.seen != p.version {
			l.report(ctx, p, err)
		}
		st.seen = p.version
		next[p.key] = st
	}
	l.states = next
}

// report logs a failing version of a part and, for a ConfigMap, records a Warning Event
// on it.
func (l *Loader) report(ctx context.Context, p keyed, err error) {
	l.reloads.WithLabelValues("error").Inc()
	logger := klog.FromContext(ctx)
	keeps := "it keeps its last good version"
	if st := l.states[p.key]; st != nil && st.goodVersion != "" {
		logger.Error(err, "Rules reload failed; the source keeps its last good version", "source", p.name)
	} else {
		keeps = "it has no good version yet, so it contributes no rules"
		logger.Error(err, "Rules reload failed; the source has no good version yet and contributes no rules", "source", p.name)
	}
	l.event(p.object, ReasonRulesLoadFailed, err.Error()+" ("+keeps+")")
	if l.leftOut != nil {
		l.leftOut(p.name, err)
	}
	if l.opts.Report != nil {
		l.opts.Report(fmt.Sprintf("Rules reload failed: %s, %s:\n%v", p.name, keeps, err))
	}
}

// apply hands a new rule set to Apply and updates the metrics.
func (l *Loader) apply(ctx context.Context, rs *rules.RuleSet, current []keyed, failed map[string]error) {
	objects := map[string]runtime.Object{}
	for _, p := range current {
		if p.object == nil {
			continue
		}
		for _, d := range l.candidate([]keyed{p}, failed) {
			for _, r := range rs.Rules {
				if r.Source == d.Source {
					objects[r.Name] = p.object
				}
			}
		}
	}
	l.mu.Lock()
	l.objects = objects
	l.mu.Unlock()
	l.opts.Apply(ctx, rs)
	var names, removed []string
	for _, r := range rs.Rules {
		names = append(names, r.Name)
	}
	for _, name := range l.appliedRules {
		if !slices.Contains(names, name) {
			removed = append(removed, name)
		}
	}
	l.applied, l.appliedRules = rs.Hash, names
	l.reloads.WithLabelValues("success").Inc()
	l.info.Reset()
	l.info.WithLabelValues(rs.Hash).Set(1)
	logger := klog.FromContext(ctx)
	logger.Info("Loaded rules", "parts", len(current), "failing", len(failed), "rules", len(rs.Rules), "hash", rs.Hash)
	if len(removed) > 0 {
		logger.Info("Rules removed: their children stay, no longer managed", "removed", removed)
	}
	for _, w := range rs.Warnings {
		logger.Info("Rules warning", "warning", w.Error())
	}
	if l.opts.Report != nil {
		text := fmt.Sprintf("Loaded %d %s", len(rs.Rules), plural(len(rs.Rules), "rule", "rules"))
		if len(failed) > 0 {
			text += fmt.Sprintf(" (%d failing %s keep their last good version)", len(failed), plural(len(failed), "source", "sources"))
		}
		if len(removed) > 0 {
			text += fmt.Sprintf("; removed: %s (the controller stops %s and releases %s parents; the children stay, no longer managed)",
				strings.Join(removed, ", "), plural(len(removed), "it", "them"), plural(len(removed), "its", "their"))
		}
		for _, w := range rs.Warnings {
			text += "\nwarning: " + w.Error()
		}
		l.opts.Report(text)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Warn records a Warning Event on the ConfigMap that holds a running rule (for example
// when the rule cannot run); nothing when the rule came from a file or Events are off.
func (l *Loader) Warn(rule, reason, message string) {
	l.mu.Lock()
	obj := l.objects[rule]
	l.mu.Unlock()
	l.event(obj, reason, message)
}

// event records a Warning Event on obj, when there is one and Events are on.
func (l *Loader) event(obj runtime.Object, reason, message string) {
	l.mu.Lock()
	recorder := l.recorder
	l.mu.Unlock()
	if recorder != nil && obj != nil {
		recorder.Event(obj, corev1.EventTypeWarning, reason, truncate(message, 1024))
	}
}

// newRecorder returns an event recorder writing through kube until ctx ends.
func newRecorder(ctx context.Context, kube kubernetes.Interface) record.EventRecorder {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	go func() {
		<-ctx.Done()
		b.Shutdown()
	}()
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubecel"})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
