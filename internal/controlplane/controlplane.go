package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

var quietEnvtest sync.Once

// ServiceCIDR is the service IP range: a /16, because a /24 runs out after 253
// Services and the benchmarks create thousands.
const ServiceCIDR = "10.96.0.0/16"

// Options configures a control plane. The zero value starts etcd and kube-apiserver in a
// temporary directory with binaries found by FindBinDir.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager (see FindBinDir).
	BinDir string
	// Dir keeps the state (etcd data, certificates, logs, kubeconfig). When empty a
	// temporary directory is used and removed by Stop; when set, its previous content
	// is replaced and left in place after Stop so the logs can be read.
	Dir string
	// ControllerManager also starts kube-controller-manager with only the garbage
	// collector and namespace controllers, or with Controllers when they are set.
	ControllerManager bool
	// Controllers are kube-controller-manager's controllers (its --controllers names,
	// such as clusterrole-aggregation-controller), when ControllerManager is set.
	Controllers []string
	// APIServerFlags are extra kube-apiserver flags (name without dashes -> value).
	APIServerFlags map[string]string
	// StartTimeout bounds the start of each process (default 60s).
	StartTimeout time.Duration
	// CRDs and CRDDirs (directories of CRD YAML files) are installed before
	// kube-controller-manager starts, so its garbage collector knows them from the start
	// instead of after its next discovery refresh (30s).
	CRDs    []*apiextensionsv1.CustomResourceDefinition
	CRDDirs []string
	// AuditWrites makes kube-apiserver log every write request (create, update, patch,
	// delete) to Dir/audit.log at Metadata level, so tests can count writes exactly.
	AuditWrites bool
}

// ControlPlane is a running local control plane.
type ControlPlane struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for the same admin user.
	Kubeconfig string
	// Dir is the state directory; process logs are Dir/*.log.
	Dir string
	// AuditLog is the audit log path when Options.AuditWrites is set.
	AuditLog string

	env       *envtest.Environment
	logs      []*os.File
	manager   *process
	watchdog  *process
	removeDir bool
}

// Start starts the control plane and waits until it serves requests. On error nothing is
// left running.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	// envtest logs through controller-runtime's logger; give it one (discarding) so it
	// does not print a warning with a stack trace about a logger never being set.
	quietEnvtest.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	binDir, err := FindBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	cp = &ControlPlane{Dir: opts.Dir}
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "kubecel-cp-"); err != nil {
			return nil, err
		}
		cp.removeDir = true
	} else if err := resetDir(cp.Dir); err != nil {
		return nil, err
	}
	if cp.Dir, err = filepath.Abs(cp.Dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	if cp.watchdog, err = startWatchdog(cp.Dir, cp.removeDir); err != nil {
		return cp, fmt.Errorf("start watchdog: %w", err)
	}
	if err := cp.startAPIServer(binDir, opts); err != nil {
		return cp, err
	}
	if err := createNamespace(ctx, cp.Config, InstallNamespace); err != nil {
		return cp, err
	}
	if opts.ControllerManager {
		if cp.manager, err = startControllerManager(ctx, binDir, cp.Dir, cp.Kubeconfig, opts.controllers(), opts.timeout()); err != nil {
			return cp, fmt.Errorf("start kube-controller-manager (log: %s): %w", filepath.Join(cp.Dir, "kube-controller-manager.log"), err)
		}
	}
	return cp, nil
}

// InstallNamespace is the namespace kubecel keeps its own objects in outside a cluster
// (its installation's identity Secret, Leases): it exists on a new control plane, as it
// does where kubecel is deployed.
const InstallNamespace = "kubecel-system"

// createNamespace creates namespace ns.
func createNamespace(ctx context.Context, cfg *rest.Config, ns string) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// controllers are kube-controller-manager's: Controllers, or by default the garbage
// collector (owner references) and the namespace controller (namespace deletion).
func (o Options) controllers() []string {
	if len(o.Controllers) > 0 {
		return o.Controllers
	}
	return []string{"garbage-collector-controller", "namespace-controller"}
}

func (o Options) timeout() time.Duration {
	if o.StartTimeout > 0 {
		return o.StartTimeout
	}
	return 60 * time.Second
}

func (cp *ControlPlane) startAPIServer(binDir string, opts Options) error {
	etcdLog, err := cp.createLog("etcd.log")
	if err != nil {
		return err
	}
	apiLog, err := cp.createLog("kube-apiserver.log")
	if err != nil {
		return err
	}
	etcdDir, certDir := filepath.Join(cp.Dir, "etcd"), filepath.Join(cp.Dir, "apiserver")
	for _, d := range []string{etcdDir, certDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    binDir,
		ControlPlaneStartTimeout: opts.timeout(),
		ControlPlaneStopTimeout:  30 * time.Second,
		CRDs:                     opts.CRDs,
		CRDDirectoryPaths:        opts.CRDDirs,
		ErrorIfCRDPathMissing:    true,
	}
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: etcdDir, Out: etcdLog, Err: etcdLog}
	api := env.ControlPlane.GetAPIServer()
	api.CertDir = certDir
	api.Out, api.Err = apiLog, apiLog
	args := api.Configure()
	args.Set("service-cluster-ip-range", ServiceCIDR)
	if opts.AuditWrites {
		if err := cp.enableAudit(args); err != nil {
			return err
		}
	}
	for name, value := range opts.APIServerFlags {
		args.Set(name, value)
	}
	cp.env = env
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("start etcd and kube-apiserver (logs: %s, %s): %w", etcdLog.Name(), apiLog.Name(), err)
	}
	cp.Config = cfg
	cp.Kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	return os.WriteFile(cp.Kubeconfig, env.KubeConfig, 0o600)
}

// Stop ends every process and, for a temporary directory, removes it. It is safe to
// call more than once and on a partly started control plane.
func (cp *ControlPlane) Stop() error {
	var errs []error
	if cp.manager != nil {
		errs = append(errs, cp.manager.stop(10*time.Second))
		cp.manager = nil
	}
	if cp.env != nil {
		errs = append(errs, cp.env.Stop())
		cp.env = nil
	}
	for _, f := range cp.logs {
		_ = f.Close()
	}
	cp.logs = nil
	if cp.watchdog != nil {
		_ = cp.watchdog.kill()
		cp.watchdog = nil
	}
	if cp.removeDir {
		errs = append(errs, os.RemoveAll(cp.Dir))
		cp.removeDir = false
	}
	return errors.Join(errs...)
}

func resetDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o700)
}

func (cp *ControlPlane) createLog(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(cp.Dir, name))
	if err == nil {
		cp.logs = append(cp.logs, f)
	}
	return f, err
}
