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

// startControllerManager runs kube-controller-manager with only the controllers the
// tests need (by default garbage collection, which follows owner references, and
// namespace deletion, which empties and removes namespaces) and waits until it reports
// healthy. The serving port is
// probed free before the process binds it, so another process can take it in between:
// a start that exits early is tried again on a new port, up to three times.
func startControllerManager(ctx context.Context, binDir, dir, kubeconfig string, controllers []string, timeout time.Duration) (*process, error) {
	var err error
	for range 3 {
		var p *process
		var exitedEarly bool
		p, exitedEarly, err = startControllerManagerOnce(ctx, binDir, dir, kubeconfig, controllers, timeout)
		if err == nil || !exitedEarly {
			return p, err
		}
	}
	return nil, err
}

func startControllerManagerOnce(ctx context.Context, binDir, dir, kubeconfig string, controllers []string, timeout time.Duration) (*process, bool, error) {
	port, err := freePort()
	if err != nil {
		return nil, false, err
	}
	cmd := exec.Command(filepath.Join(binDir, "kube-controller-manager"),
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--controllers="+strings.Join(controllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(dir, "kube-controller-manager"),
	)
	p, err := startProcess(cmd, filepath.Join(dir, "kube-controller-manager.log"))
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
