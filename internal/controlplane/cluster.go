package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The binaries of each kind of control plane.
var (
	minimalBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager"}
	fullBinaries    = append(minimalBinaries[:len(minimalBinaries):len(minimalBinaries)], "kube-scheduler", "kwok")
)

// clusterKeys are the files that kube-controller-manager's ServiceAccount token and
// root CA controllers need: the key the API server's service-account tokens are
// signed with (envtest makes it, apiserver/sa-signer.key), and the CA of the API
// server's serving certificate.
type clusterKeys struct {
	serviceAccountKey string
	rootCA            string
}

// startCluster starts what runs beside the API server in a cluster: kube-controller-
// manager with a cluster's controllers, kube-scheduler, and KWOK with opts.Nodes
// simulated nodes, all at once. It returns once both components are healthy, every node
// is Ready, and the default namespace has its ServiceAccount (Pods need it).
func (cp *ControlPlane) startCluster(ctx context.Context, binDir string, opts Options) error {
	keys := &clusterKeys{
		serviceAccountKey: filepath.Join(cp.Dir, "apiserver", "sa-signer.key"),
		rootCA:            filepath.Join(cp.Dir, "ca.crt"),
	}
	if err := os.WriteFile(keys.rootCA, cp.Config.CAData, 0o600); err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if err := createNodes(ctx, kube, opts.nodes()); err != nil {
		return err
	}
	if cp.kwok, err = startKWOK(binDir, cp.Dir, cp.Kubeconfig); err != nil {
		return fmt.Errorf("start kwok: %w", err)
	}
	// The first to fail stops the others' waits.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		cp.manager, err = startServer(gctx, binDir, cp.Dir, "kube-controller-manager", controllerManagerFlags(cp.Kubeconfig, keys), opts.timeout())
		return cp.logged("kube-controller-manager", err)
	})
	g.Go(func() (err error) {
		cp.scheduler, err = startServer(gctx, binDir, cp.Dir, "kube-scheduler", schedulerFlags(cp.Kubeconfig), opts.timeout())
		return cp.logged("kube-scheduler", err)
	})
	g.Go(func() error {
		return cp.logged("kwok", waitNodesReady(gctx, kube, cp.kwok, opts.nodes(), opts.timeout()))
	})
	if err := g.Wait(); err != nil {
		return err
	}
	err = poll(ctx, opts.timeout(), func() (bool, string, error) {
		_, err := kube.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "no ServiceAccount default/default yet", nil
		}
		return err == nil, fmt.Sprint(err), nil
	})
	return cp.logged("kube-controller-manager", err)
}

// logged wraps the error of starting a component with the path of its log.
func (cp *ControlPlane) logged(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("start %s (log: %s): %w", name, filepath.Join(cp.Dir, name+".log"), err)
}

func (o Options) nodes() int {
	if o.Nodes > 0 {
		return o.Nodes
	}
	return DefaultNodes
}

// stopCluster stops KWOK, kube-scheduler and kube-controller-manager, in that order,
// those that run.
func (cp *ControlPlane) stopCluster() []error {
	var errs []error
	for _, p := range []**process{&cp.kwok, &cp.scheduler, &cp.manager} {
		if *p != nil {
			errs = append(errs, (*p).stop(10*time.Second))
			*p = nil
		}
	}
	return errs
}
