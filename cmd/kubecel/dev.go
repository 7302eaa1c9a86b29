package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/examples"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/leader"
	"github.com/kubecel/kubecel/internal/lease"
	"github.com/kubecel/kubecel/internal/rollout"
)

type devOptions struct {
	dir         string
	binDir      string
	minimal     bool
	noExamples  bool
	crds        string
	rules       string
	objects     []string
	metricsAddr string
	healthAddr  string
	reports     *devReports
	// readyWait is how long to wait for the sample parents to turn Ready before saying
	// which are not (defaultReadyWait when 0).
	readyWait time.Duration
}

func newDevCommand() *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local control plane with the examples and the controller until Ctrl-C",
		Long: `dev starts a local Kubernetes control plane from the binaries built by
'make controlplane', installs the examples' CRDs, writes the rules of every example to
DIR/rules.yaml, runs the controller on that file (edits reload, as with 'kubecel run
--rules'), applies the examples' sample parents and prints the kubeconfig and what to
try. Each reload of the rules file prints its result in the terminal: the rules loaded
(and their warnings), or the errors of a broken edit, while the last good rules keep
running; so does a rule that cannot run (a kind not served). The controller's full log
is DIR/kubecel.log. With --no-examples, nothing is installed and the rules file is
empty: a start for your own CRD and rules. Ctrl-C stops every process.

The control plane runs what a cluster runs: etcd, kube-apiserver, kube-controller-manager
with a cluster's controllers (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs,
CronJobs, EndpointSlices, ServiceAccounts, ClusterRole aggregation, quotas, volume
binding, garbage collection, namespaces) and kube-scheduler. Only the nodes are
simulated: KWOK plays the kubelets of three nodes, so Pods are scheduled, run and turn
Ready at once, Deployments become Available, Jobs complete and volume claims are bound;
no container runs. A container image whose tag contains "broken" (app:1.2-broken)
never pulls: its Pod stays Pending in ImagePullBackOff, to show a bad rollout. With
--minimal, only etcd, kube-apiserver and kube-controller-manager's garbage collector
and namespace controllers run: no Pod is ever created, and nothing becomes ready by
itself.`,
		Example: `  # the examples on a local control plane, with the controller; Ctrl-C stops all
  kubecel dev

  # your own CRDs, rules and parents, without the examples
  kubecel dev --no-examples --crds crds/ --rules rules.yaml -f parents.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "state directory (replaced at start and kept at exit); default a temporary directory removed at exit")
	f.StringVar(&o.binDir, "bin-dir", "", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (default: $"+controlplane.BinDirEnv+", next to kubecel, or ./bin)")
	f.BoolVar(&o.minimal, "minimal", false, "run no scheduler, no nodes and only the garbage collector and namespace controllers: Deployments and StatefulSets get no Pods (needs no kube-scheduler or kwok)")
	f.BoolVar(&o.noExamples, "no-examples", false, "install no examples: no CRDs, no sample parents, and an empty rules file to edit (or the rules of --rules)")
	f.StringVar(&o.crds, "crds", "", "directory of your own CustomResourceDefinition manifests to install at start, besides the examples' (or instead, with --no-examples)")
	f.StringVar(&o.rules, "rules", "", "a rules file of your own, written to DIR/rules.yaml after the examples' rules (or alone, with --no-examples)")
	f.StringArrayVarP(&o.objects, "filename", "f", nil, "a file of objects (your parents, what they read) to apply once the controller runs; repeatable")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "address of the controller's /metrics (default: a free port on 127.0.0.1)")
	f.StringVar(&o.healthAddr, "health-addr", "", "address of the controller's /healthz and /readyz (default: a free port on 127.0.0.1)")
	return cmd
}

// emptyRules is the rules file of `kubecel dev --no-examples`.
const emptyRules = `# Add rules here: the controller reloads this file when it changes.
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules: []
`

func (o *devOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	o.reports = &devReports{w: out}
	crds, rulesData, err := o.installs()
	if err != nil {
		return err
	}

	start := time.Now()
	if o.minimal {
		fmt.Fprintln(out, "Starting the local control plane (etcd, kube-apiserver, kube-controller-manager: garbage collector and namespaces only)...")
	} else {
		fmt.Fprintf(out, "Starting the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok with %d simulated nodes)...\n", controlplane.DefaultNodes)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: o.binDir, Dir: o.dir, ControllerManager: true, Full: !o.minimal, CRDs: crds})
	if err != nil {
		return err
	}
	defer cp.Stop()
	fmt.Fprintf(out, "Control plane ready in %s, %d CRDs installed (logs: %s).\n",
		time.Since(start).Round(100*time.Millisecond), len(crds), filepath.Join(cp.Dir, "*.log"))

	rulesFile := filepath.Join(cp.Dir, "rules.yaml")
	if err := os.WriteFile(rulesFile, rulesData, 0o644); err != nil {
		return err
	}
	ctrl, err := o.startController(ctx, cmd, cp, rulesFile)
	if err != nil {
		return err
	}
	defer ctrl.stop()
	samples, err := o.applyObjects(ctx, cp.Config)
	if err != nil {
		return err
	}
	// What to type comes first, before the wait for the controller: whoever reads it (a
	// person, a script) may go on as soon as the controller is ready.
	fmt.Fprintf(out, "export KUBECONFIG=%s\n", cp.Kubeconfig)
	fmt.Fprintln(out, "Then try:")
	for _, try := range o.tries(rulesFile) {
		fmt.Fprintln(out, "  "+try)
	}
	if err := ctrl.waitReady(ctx, 2*time.Minute); errors.Is(err, errNotReady) {
		fmt.Fprintf(out, "\nThe controller is not ready yet (see %s and http://%s/readyz).\n", ctrl.logPath, ctrl.opts.healthAddr)
	} else if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(out, "\nStopping...")
			return nil // interrupted while starting: the defers stop everything
		}
		return err
	}
	fmt.Fprintf(out, "\nController running on %s with %d sample parents (log: %s; metrics: http://%s/metrics; health: http://%s/readyz).\n",
		rulesFile, len(samples), ctrl.logPath, ctrl.opts.metricsAddr, ctrl.opts.healthAddr)
	o.reports.start()
	fmt.Fprintln(out, "Press Ctrl-C to stop.")
	if !o.minimal {
		// On the full control plane the sample parents turn Ready by themselves: say when.
		readyCtx, stopReady := context.WithCancel(ctx)
		defer stopReady()
		go o.reportReady(readyCtx, cp.Config, readyParents(rulesData, samples), rulesFile, cp.Kubeconfig, start)
	}

	select {
	case <-ctx.Done():
	case err := <-ctrl.done:
		ctrl.done <- err // for stop
		if err == nil {
			err = errors.New("exited")
		}
		return fmt.Errorf("controller stopped (log: %s): %w", ctrl.logPath, err)
	}
	fmt.Fprintln(out, "\nStopping...")
	if err := ctrl.stop(); err != nil {
		return err
	}
	return cp.Stop()
}

// tries are the three things to try that dev prints.
func (o *devOptions) tries(rulesFile string) []string {
	if o.noExamples {
		return []string{
			"${EDITOR:-vi} " + rulesFile + "   # add rules: saved changes load within seconds (the result shows here)",
			"kubectl apply -f parent.yaml   # create a parent for them (and its CRD first, if it has one)",
			"kubectl get all,cm -A -l app.kubernetes.io/managed-by=kubecel   # what the rules made",
		}
	}
	return []string{
		"kubectl get deploy,sts,svc,ing,cm,quota -A -l app.kubernetes.io/managed-by=kubecel   # what the rules made from the samples",
		`kubectl patch webapp hello --type=merge -p '{"spec":{"replicas":2,"expose":true}}'   # edit a parent, then: kubectl get deploy,svc hello`,
		"${EDITOR:-vi} " + rulesFile + "   # edit the rules: saved changes load within seconds (the result shows here)",
	}
}

// exampleCRDs parses the examples' CRDs, strictly.
func exampleCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, data := range examples.CRDs() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("example CRD: %w", err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// devController is `kubecel run` on the dev control plane, in this process.
type devController struct {
	opts    runOptions
	logPath string
	log     *os.File
	cancel  context.CancelFunc
	done    chan error
}

// startController runs the controller as `kubecel run --rules rulesFile` would, logging
// to Dir/kubecel.log at the command's -v level.
func (o *devOptions) startController(ctx context.Context, cmd *cobra.Command, cp *controlplane.ControlPlane, rulesFile string) (*devController, error) {
	c := &devController{
		opts: runOptions{
			rulesFiles:    []string{rulesFile},
			cluster:       clikit.KubeconfigFile(cp.Kubeconfig),
			workers:       4,
			batch:         engine.DefaultMaxWritesPerReconcile,
			revisionsKept: rollout.DefaultKeep,
			// As kubecel run: a kubecel run against this cluster stands by.
			leader:      leaderOptions{enabled: true, opts: leader.Options{Timing: lease.Default}},
			qps:         200,
			burst:       400,
			metricsAddr: o.metricsAddr,
			healthAddr:  o.healthAddr,
			report:      o.reports.print,
		},
		logPath: filepath.Join(cp.Dir, "kubecel.log"),
		done:    make(chan error, 1),
	}
	var err error
	for _, addr := range []*string{&c.opts.metricsAddr, &c.opts.healthAddr} {
		if *addr == "" {
			if *addr, err = freeLocalAddr(); err != nil {
				return nil, err
			}
		}
	}
	if c.log, err = os.Create(c.logPath); err != nil {
		return nil, err
	}
	verbosity := 0
	if v := cmd.Flag("v"); v != nil {
		verbosity, _ = strconv.Atoi(v.Value.String())
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(c.log), textlogger.Verbosity(verbosity)))
	ctx, c.cancel = context.WithCancel(klog.NewContext(ctx, logger))
	go func() { c.done <- c.opts.run(ctx) }()
	return c, nil
}

// errNotReady says the controller did not become ready in time.
var errNotReady = errors.New("controller not ready")

// waitReady waits until the controller's /readyz answers OK (the rules are loaded and
// their caches synced), for at most timeout.
func (c *devController) waitReady(ctx context.Context, timeout time.Duration) error {
	url := "http://" + c.opts.healthAddr + "/readyz"
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
func (c *devController) stop() error {
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

// devReports prints the controller's reload results in dev's terminal, each line after
// the first indented, so that an edit of the rules file shows its outcome where it was
// made. What comes before the start is done is held, and printed after its messages.
type devReports struct {
	mu   sync.Mutex
	w    io.Writer
	held []string
	live bool
}

func (r *devReports) print(text string) {
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
func (r *devReports) start() {
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
