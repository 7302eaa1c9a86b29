package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/rules"
)

// RulesSource yields the current bytes of a rules file and a name for messages.
type RulesSource interface {
	Read(ctx context.Context) ([]byte, error)
	String() string
}

// FileSource reads rules from a file.
type FileSource string

func (f FileSource) Read(context.Context) ([]byte, error) { return os.ReadFile(string(f)) }
func (f FileSource) String() string                       { return string(f) }

// Loader loads rules from a source into a controller and reloads them when the source
// changes. A reload that fails keeps the last good rules running.
type Loader struct {
	Controller *Controller
	Source     RulesSource
	// Options returns the load options (schemas) for each load; nil = zero options.
	Options func(ctx context.Context) rules.Options
	// Interval between checks of the source (default 2s).
	Interval time.Duration
	// OnError is told about every failed reload (e.g. to record an Event).
	OnError func(ctx context.Context, err error)

	lastSum [32]byte
	reloads *prometheus.CounterVec
	hash    *prometheus.GaugeVec
}

// Load reads and applies the rules once; it fails when they do not load.
func (l *Loader) Load(ctx context.Context) error {
	if l.reloads == nil {
		l.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubecel_rules_reload_total", Help: "Rules loads by result (success, error).",
		}, []string{"result"})
		l.hash = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubecel_rules_info", Help: "The active rules: value 1, labelled with the rules file's sha256.",
		}, []string{"hash"})
		reg := l.Controller.opts.Registry
		if err := reg.Register(l.reloads); err != nil {
			return err
		}
		if err := reg.Register(l.hash); err != nil {
			return err
		}
	}
	data, err := l.Source.Read(ctx)
	if err != nil {
		l.reloads.WithLabelValues("error").Inc()
		return fmt.Errorf("read rules %s: %w", l.Source, err)
	}
	sum := sha256.Sum256(data)
	if sum == l.lastSum {
		return nil
	}
	var opts rules.Options
	if l.Options != nil {
		opts = l.Options(ctx)
	}
	rs, err := rules.Load(data, opts)
	if err != nil {
		l.reloads.WithLabelValues("error").Inc()
		l.lastSum = sum // report a broken version once, not at every check
		return fmt.Errorf("load rules %s: %w", l.Source, err)
	}
	l.Controller.SetRules(ctx, rs)
	l.lastSum = sum
	l.reloads.WithLabelValues("success").Inc()
	l.hash.Reset()
	l.hash.WithLabelValues(rs.Hash).Set(1)
	logger := klog.FromContext(ctx)
	logger.Info("Loaded rules", "source", l.Source.String(), "rules", len(rs.Rules), "hash", rs.Hash)
	for _, w := range rs.Warnings {
		logger.Info("Rules warning", "source", l.Source.String(), "warning", w.Error())
	}
	return nil
}

// Watch checks the source every Interval until ctx ends and reloads it when it changes.
func (l *Loader) Watch(ctx context.Context) {
	interval := l.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := l.Load(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Rules reload failed; the last good rules keep running")
			if l.OnError != nil {
				l.OnError(ctx, err)
			}
		}
	}
}
