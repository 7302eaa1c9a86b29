package dev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/examples"
	"github.com/kubecel/kubecel/internal/cli/buildinfo"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/controlplane"
)

// Options are dev's flags.
type Options struct {
	// Dir is the state directory, replaced at start and kept at exit; "" makes a
	// temporary one, removed at exit.
	Dir string
	// BinDir holds the control-plane binaries ("": controlplane's default).
	BinDir string
	// Minimal runs no scheduler and no nodes, and only the garbage collector and
	// namespace controllers.
	Minimal bool
	// NoExamples installs no examples: no CRDs, no sample parents, empty rules.
	NoExamples bool
	// CRDs is a directory of CRD manifests to install besides the examples', when set.
	CRDs string
	// Rules is a rules file whose rules follow the examples', when set.
	Rules string
	// Objects are files of objects to apply once the controller runs.
	Objects []string
	// MetricsAddr and HealthAddr are where the controller serves /metrics and /readyz
	// ("": a free port on 127.0.0.1).
	MetricsAddr, HealthAddr string
	// Verbosity is the -v level of the controller's log.
	Verbosity int
	// Build labels the controller's kubecel_build_info metric.
	Build buildinfo.Info

	reports *reports
	// readyWait is how long to wait for the sample parents to turn Ready before saying
	// which are not (defaultReadyWait when 0).
	readyWait time.Duration
}

// emptyRules is the rules file of `kubecel dev --no-examples`.
const emptyRules = `# Add rules here: the controller reloads this file when it changes.
apiVersion: kubecel.dev/v1alpha1
kind: RuleSet
rules: []
`

// Run starts the local control plane, installs the examples and the objects of o, runs
// the controller on DIR/rules.yaml in this process and prints on s.Out what to try and
// the controller's reports, until ctx ends; then it stops every process it started.
func Run(ctx context.Context, o *Options, s clikit.Streams) error {
	out := s.Out
	o.reports = &reports{w: out}
	crds, rulesData, err := o.installs()
	if err != nil {
		return err
	}

	start := time.Now()
	if o.Minimal {
		fmt.Fprintln(out, "Starting the local control plane (etcd, kube-apiserver, kube-controller-manager: garbage collector and namespaces only)...")
	} else {
		fmt.Fprintf(out, "Starting the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok with %d simulated nodes)...\n", controlplane.DefaultNodes)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: o.BinDir, Dir: o.Dir, ControllerManager: true, Full: !o.Minimal, CRDs: crds})
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
	ctrl, err := o.startController(ctx, cp, rulesFile)
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
		fmt.Fprintf(out, "\nThe controller is not ready yet (see %s and http://%s/readyz).\n", ctrl.logPath, ctrl.opts.HealthAddr)
	} else if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(out, "\nStopping...")
			return nil // interrupted while starting: the defers stop everything
		}
		return err
	}
	fmt.Fprintf(out, "\nController running on %s with %d sample parents (log: %s; metrics: http://%s/metrics; health: http://%s/readyz).\n",
		rulesFile, len(samples), ctrl.logPath, ctrl.opts.MetricsAddr, ctrl.opts.HealthAddr)
	o.reports.start()
	fmt.Fprintln(out, "Press Ctrl-C to stop.")
	if !o.Minimal {
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
func (o *Options) tries(rulesFile string) []string {
	if o.NoExamples {
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
