package main

import (
	"context"
	_ "embed"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/controlplane"
)

var (
	//go:embed testdata/crd.yaml
	crdYAML []byte
	// clusterCRDYAML is the cluster-scoped parents' CRD, for the noisy neighbour's
	// cluster shape (noisyshape.go).
	//go:embed testdata/crd-cluster.yaml
	clusterCRDYAML []byte
	//go:embed testdata/rules.yaml
	rulesYAML []byte
	//go:embed testdata/rules-refs.yaml
	rulesRefsYAML []byte
)

const (
	// benchNS holds the parents and the controller's children; baselineNS the children
	// the baseline applies directly.
	benchNS    = "bench"
	baselineNS = "bench-baseline"
	// userAgent marks the bench's own requests so that the audit log tells them from
	// the controller's.
	userAgent = "kubecel-bench"
	image1    = "registry.example.com/web:1"
	image2    = "registry.example.com/web:2"
)

var (
	webapps     = schema.GroupVersionResource{Group: "bench.kubecel.dev", Version: "v1", Resource: "webapps"}
	configmaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	services    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	childGVRs   = map[string]schema.GroupVersionResource{"ConfigMap": configmaps, "Deployment": deployments, "Service": services}
)

// bench is the running benchmark: control plane, clients and, once started, the
// controller's replicas.
type bench struct {
	cfg     config
	cp      *controlplane.ControlPlane
	kube    kubernetes.Interface
	clients []dynamic.Interface // one per parallel worker, each with its own connection
	audit   *auditCounter
	ctrls   fleet
	watch   *tracker
	// cpPIDs are the control plane's processes by command name (machinecpu.go).
	cpPIDs map[string][]int
}

func setup(ctx context.Context, c config) (*bench, error) {
	if err := os.RemoveAll(c.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for name, data := range map[string][]byte{"testdata/crd.yaml": crdYAML, "testdata/crd-cluster.yaml": clusterCRDYAML} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		crds = append(crds, crd)
	}
	logf("starting the control plane (etcd, kube-apiserver with audit log, kube-controller-manager)")
	start := time.Now()
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Dir:               filepath.Join(c.dir, "controlplane"),
		ControllerManager: true,
		AuditWrites:       true,
		CRDs:              crds,
		StartTimeout:      2 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	logf("control plane ready in %s", time.Since(start).Round(time.Millisecond))
	b := &bench{cfg: c, cp: cp, audit: &auditCounter{path: cp.AuditLog}, cpPIDs: controlPlanePIDs(filepath.Join(c.dir, "controlplane"))}
	logf("control plane processes: %v", b.cpPIDs)
	if err := b.connect(); err != nil {
		b.close()
		return nil, err
	}
	namespaces := []string{benchNS, baselineNS, limitNS}
	if c.sharding {
		namespaces = append(namespaces, shardNS)
	}
	for _, ns := range namespaces {
		_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		// The control plane makes kubecel-system (shardNS) itself.
		if err != nil && !apierrors.IsAlreadyExists(err) {
			b.close()
			return nil, fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	return b, nil
}

// connect builds the bench's clients: unthrottled (QPS < 0 disables client-go's rate
// limiter), each on its own connection (a custom Dial keeps client-go from sharing one
// cached transport), so that the baseline is the API server's limit, not the client's.
func (b *bench) connect() error {
	base := rest.CopyConfig(b.cp.Config)
	base.UserAgent = userAgent
	base.QPS, base.Burst = -1, 0
	kcfg := rest.CopyConfig(base)
	kcfg.ContentType = "application/vnd.kubernetes.protobuf"
	kube, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return err
	}
	b.kube = kube
	for range b.cfg.clients {
		cfg := rest.CopyConfig(base)
		cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		c, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		b.clients = append(b.clients, c)
	}
	return nil
}

func (b *bench) close() {
	if b.watch != nil {
		b.watch.stop()
	}
	b.ctrls.stop()
	if err := b.cp.Stop(); err != nil {
		logf("stop control plane: %v", err)
	}
}

// parallel runs fn for i in [0, n) on the bench's clients, each worker taking the next
// index, and stops at the first error.
func (b *bench) parallel(ctx context.Context, n int, fn func(ctx context.Context, c dynamic.Interface, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for _, c := range b.clients {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return ctx.Err()
				}
				if err := fn(ctx, c, i); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}

// parentName is the name of parent i; names sort in creation order.
func parentName(i int) string { return fmt.Sprintf("app-%05d", i) }

// newParent returns parent i of the bench's rule.
func newParent(ns string, i int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "bench.kubecel.dev/v1", "kind": "WebApp",
		"metadata": map[string]any{"name": parentName(i), "namespace": ns},
		"spec":     map[string]any{"image": image1, "replicas": int64(1), "port": int64(8080)},
	}}
}
