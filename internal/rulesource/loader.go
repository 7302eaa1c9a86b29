package rulesource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubecel/kubecel/rules"
)

// DefaultInterval is how often files are re-read.
const DefaultInterval = 2 * time.Second

// ReasonRulesLoadFailed is the reason of the Warning Event recorded on a ConfigMap whose
// rules do not load.
const ReasonRulesLoadFailed = "RulesLoadFailed"

// Options configure a Loader.
type Options struct {
	// Sources, in the order their documents join the rule set.
	Sources []Source
	// Apply receives every rule set that loads and differs from the last one; it is
	// never called concurrently.
	Apply func(ctx context.Context, rs *rules.RuleSet)
	// LoadOptions returns the options (schemas, limits) of each load; nil means zero
	// options.
	LoadOptions func(ctx context.Context) rules.Options
	// Registry gets the metrics kubecel_rules_reload_total and kubecel_rules_info; nil
	// leaves them unregistered.
	Registry prometheus.Registerer
	// Events is the client that records Warning Events on ConfigMaps; nil records none
	// (a dry run).
	Events kubernetes.Interface
	// Interval between reads of files (default DefaultInterval).
	Interval time.Duration
	// Report, when set, receives a few lines of text for each reload, besides the log:
	// the rules loaded and their warnings, or the source that failed and why. kubecel
	// dev prints them in its terminal.
	Report func(text string)
}

// Loader loads the rules of its sources as one rule set, and reloads it when a source
// changes. See the package documentation for its guarantees.
type Loader struct {
	opts    Options
	reloads *prometheus.CounterVec
	info    *prometheus.GaugeVec
	failing prometheus.Gauge
	kick    chan struct{}

	// reloading serialises reloads and guards states and applied.
	reloading sync.Mutex
	// states of the parts, by key (source index and part name).
	states map[string]*partState
	// applied is the hash of the rule set last given to Apply, and names its rules.
	applied      string
	appliedRules []string
	// last is the rule set that last loaded: the next load takes over its compiled
	// rules that did not change (rules.Options.Previous).
	last *rules.RuleSet

	// mu guards recorder and objects, which Warn reads: Apply may call Warn (through
	// the controller) while a reload runs.
	mu       sync.Mutex
	recorder record.EventRecorder
	// objects maps each running rule to the ConfigMap it came from, for Warn.
	objects map[string]runtime.Object
	// leftOut, when set, is told of each part that fails (LoadOnce).
	leftOut func(source string, err error)
}

// partState is what the Loader remembers of one part.
type partState struct {
	// seen is the version last loaded or reported; good and goodVersion the last version
	// that loaded ("" before one did).
	seen, goodVersion string
	good              []rules.Document
}

// New returns a Loader; Start loads the rules and Watch reloads them.
func New(opts Options) (*Loader, error) {
	if opts.Apply == nil || len(opts.Sources) == 0 {
		return nil, errors.New("rulesource: a Loader needs sources and an Apply func")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	l := &Loader{
		opts: opts,
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_rules_reload_total",
			Help: "Rules loads by result: success (a new rule set runs), error (a version of a source that does not load).",
		}, []string{"result"}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubecel_rules_info",
			Help: "The running rules: value 1, labelled with their sha256 (of the file, when there is one document).",
		}, []string{"hash"}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubecel_rules_failing_sources",
			Help: "Sources (files, ConfigMap keys) whose current version does not load, and that keep their last good version or contribute no rules; 1 when only the sources together do not load.",
		}),
		kick:   make(chan struct{}, 1),
		states: map[string]*partState{},
	}
	if opts.Registry != nil {
		for _, c := range []prometheus.Collector{l.reloads, l.info, l.failing} {
			if err := opts.Registry.Register(c); err != nil {
				return nil, fmt.Errorf("register rules metrics: %w", err)
			}
		}
	}
	return l, nil
}

// Start starts watching the sources and loads the rules once. It fails when a named
// source does not load; the watches stop when ctx ends.
func (l *Loader) Start(ctx context.Context) error {
	if l.opts.Events != nil {
		l.mu.Lock()
		l.recorder = newRecorder(ctx, l.opts.Events)
		l.mu.Unlock()
	}
	for _, s := range l.opts.Sources {
		if err := s.start(ctx, l.opts.Interval, l.changed); err != nil {
			return err
		}
	}
	return l.reload(ctx, true)
}

// Watch reloads the rules whenever a source changes, until ctx ends. Failures are
// reported (logs, Events, metrics), never returned.
func (l *Loader) Watch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		}
		_ = l.reload(ctx, false) // reported where it failed
	}
}

// changed asks Watch for a reload; many calls before it runs make one reload.
func (l *Loader) changed() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// keyed is a part with its key.
type keyed struct {
	part
	key, version string
}

// gather reads the current parts of every source.
func (l *Loader) gather() []keyed {
	var out []keyed
	for i, s := range l.opts.Sources {
		for _, p := range s.parts() {
			out = append(out, keyed{part: p, key: strconv.Itoa(i) + " " + p.name, version: version(p)})
		}
	}
	return out
}

// version identifies the content of a part, or why it could not be read.
func version(p part) string {
	h := sha256.New()
	if p.err != nil {
		h.Write([]byte("error\x00" + p.err.Error()))
	}
	for _, d := range p.docs {
		fmt.Fprintf(h, "%d:%s%d:", len(d.Source), d.Source, len(d.Data))
		h.Write(d.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// unchanged reports whether the parts are those last seen.
func (l *Loader) unchanged(current []keyed) bool {
	if len(current) != len(l.states) {
		return false
	}
	for _, p := range current {
		if st, ok := l.states[p.key]; !ok || st.seen != p.version {
			return false
		}
	}
	return true
}
