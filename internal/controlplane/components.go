package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// minimalControllers are the controllers of the minimal control plane's
// kube-controller-manager: garbage collection follows owner references; namespace
// deletion empties and removes namespaces.
var minimalControllers = []string{"garbage-collector-controller", "namespace-controller"}

// clusterControllers are the controllers of the full control plane's
// kube-controller-manager: those a cluster runs for workloads, Services, ServiceAccounts,
// RBAC aggregation, quotas and volumes, besides the minimal ones. Node lifecycle and IPAM
// are left out: the simulated nodes stay Ready and carry their Pod CIDRs from the start.
var clusterControllers = append([]string{
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"job-controller",
	"cronjob-controller",
	"ttl-after-finished-controller",
	"disruption-controller",
	"endpointslice-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller",
	"resourcequota-controller",
	"persistentvolume-binder-controller",
	"persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
	"pod-garbage-collector-controller",
}, minimalControllers...)

// controllerManagerFlags are kube-controller-manager's flags besides the serving ones,
// for a minimal control plane, or for a full one when keys holds the service-account
// signing key and the cluster's CA.
func controllerManagerFlags(kubeconfig string, keys *clusterKeys) []string {
	flags := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
	}
	if keys == nil {
		return append(flags, "--controllers="+strings.Join(minimalControllers, ","))
	}
	return append(flags,
		"--controllers="+strings.Join(clusterControllers, ","),
		// The token controller signs with the key whose public half the API server
		// verifies with; both it and the root CA publisher hand out the serving CA.
		"--service-account-private-key-file="+keys.serviceAccountKey,
		"--root-ca-file="+keys.rootCA,
		// A burst of Pods (a rollout of many parents) is not held back by the
		// default client rate limits (20 requests/s).
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	)
}

// schedulerFlags are kube-scheduler's flags besides the serving ones.
func schedulerFlags(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	}
}

// startServer runs a control-plane component that serves /healthz over HTTPS
// (kube-controller-manager, kube-scheduler) with flags and a loopback serving port, and
// waits until it reports healthy. Its log is dir/NAME.log. The serving port is probed
// free before the process binds it, so another process can take it in between: a start
// that exits early is tried again on a new port, up to three times.
func startServer(ctx context.Context, binDir, dir, name string, flags []string, timeout time.Duration) (*process, error) {
	var err error
	for range 3 {
		var p *process
		var exitedEarly bool
		p, exitedEarly, err = startServerOnce(ctx, binDir, dir, name, flags, timeout)
		if err == nil || !exitedEarly {
			return p, err
		}
	}
	return nil, err
}

func startServerOnce(ctx context.Context, binDir, dir, name string, flags []string, timeout time.Duration) (*process, bool, error) {
	port, err := freePort()
	if err != nil {
		return nil, false, err
	}
	args := append(flags[:len(flags):len(flags)],
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(dir, name),
	)
	p, err := startProcess(exec.Command(filepath.Join(binDir, name), args...), filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, false, err
	}
	if err := waitHealthy(ctx, p, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), timeout); err != nil {
		exited, _ := p.exited()
		_ = p.kill()
		return nil, exited, err
	}
	return p, false, nil
}

// waitHealthy polls url until it answers 200, the process exits or timeout passes.
func waitHealthy(ctx context.Context, p *process, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{
		Timeout: 2 * time.Second,
		// A local self-signed serving certificate; only health is read.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if exited, err := p.exited(); exited {
			return fmt.Errorf("exited before becoming healthy: %v", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not healthy at %s: %w", url, ctx.Err())
		case <-tick.C:
		}
	}
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
