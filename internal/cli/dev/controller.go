package dev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/run"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/leader"
	"github.com/kubecel/kubecel/internal/lease"
	"github.com/kubecel/kubecel/internal/rollout"
)

// controller is kubecel run on the dev control plane, in this process.
type controller struct {
	opts    run.Options
	logPath string
	log     *os.File
	cancel  context.CancelFunc
	done    chan error
}

// startController runs the controller as `kubecel run --rules rulesFile` would, logging
// to Dir/kubecel.log at the command's -v level.
func (o *Options) startController(ctx context.Context, cp *controlplane.ControlPlane, rulesFile string) (*controller, error) {
	c := &controller{
		opts: run.Options{
			RulesFiles:            []string{rulesFile},
			Cluster:               clikit.KubeconfigFile(cp.Kubeconfig),
			Workers:               4,
			MaxWritesPerReconcile: engine.DefaultMaxWritesPerReconcile,
			RevisionsKept:         rollout.DefaultKeep,
			// As kubecel run: a kubecel run against this cluster stands by.
			Leader:      run.LeaderOptions{Enabled: true, Options: leader.Options{Timing: lease.Default}},
			QPS:         200,
			Burst:       400,
			MetricsAddr: o.MetricsAddr,
			HealthAddr:  o.HealthAddr,
			Build:       o.Build,
			Report:      o.reports.print,
		},
		logPath: filepath.Join(cp.Dir, "kubecel.log"),
		done:    make(chan error, 1),
	}
	var err error
	for _, addr := range []*string{&c.opts.MetricsAddr, &c.opts.HealthAddr} {
		if *addr == "" {
			if *addr, err = freeLocalAddr(); err != nil {
				return nil, err
			}
		}
	}
	if c.log, err = os.Create(c.logPath); err != nil {
		return nil, err
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(c.log), textlogger.Verbosity(o.Verbosity)))
	ctx, c.cancel = context.WithCancel(klog.NewContext(ctx, logger))
	go func() { c.done <- run.Run(ctx, &c.opts, clikit.Streams{}) }()
	return c, nil
}

// errNotReady says the controller did not become ready in time.
var errNotReady = errors.New("controller not ready")

// waitReady waits until the controller's /readyz answers OK (the rules are loaded and
// their caches synced), for at most timeout.
func (c *controller) waitReady(ctx context.Context, timeout time.Duration) error {
	url := "http://" + c.opts.HealthAddr + "/readyz"
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-c.done:
			c.done <- err
			return fmt.Errorf("controller did not start (log: %s): %w", c.logPath, err)
		case <-deadline.C:
			return errNotReady
		case <-tick.C:
		}
	}
}

// stop ends the controller and waits for it. It is safe to call more than once.
func (c *controller) stop() error {
	if c.cancel == nil {
		return nil
	}
	c.cancel()
	c.cancel = nil
	err := <-c.done
	_ = c.log.Close()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// reports prints the controller's reload results in dev's terminal, each line after
// the first indented, so that an edit of the rules file shows its outcome where it was
// made. What comes before the start is done is held, and printed after its messages.
type reports struct {
	mu   sync.Mutex
	w    io.Writer
	held []string
	live bool
}

func (r *reports) print(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := fmt.Sprintf("[%s] %s", time.Now().Format(time.TimeOnly), strings.ReplaceAll(text, "\n", "\n    "))
	if !r.live {
		r.held = append(r.held, line)
		return
	}
	fmt.Fprintln(r.w, line)
}

// start prints what was held, and from then on each report as it comes.
func (r *reports) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, line := range r.held {
		fmt.Fprintln(r.w, line)
	}
	r.held, r.live = nil, true
}

// freeLocalAddr returns a 127.0.0.1 address with a port that is free now.
func freeLocalAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
