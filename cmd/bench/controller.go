package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// controller is one kubecel process under test (one replica).
type controller struct {
	name    string // "replica-1", ...
	dir     string // its log, profiles and metrics snapshots
	cmd     *exec.Cmd
	log     *os.File
	metrics string // base URL of --metrics-addr
	health  string // base URL of --health-addr
	pprof   string // base URL of --pprof-addr
	done    chan struct{}
	waitErr error
}

// startProcess starts `kubecel run` with args plus its three endpoints on the given
// ports, logging to dir/kubecel.log.
func startProcess(c config, name, dir string, args []string, ports [3]int) (*controller, error) {
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	args = append([]string{"run", "--metrics-addr", addr(ports[0]), "--health-addr", addr(ports[1]), "--pprof-addr", addr(ports[2])}, args...)
	log, err := os.Create(filepath.Join(dir, "kubecel.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.kubecel, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), strings.Fields(c.kubecelEnv)...)
	logf("starting %s: %s %s %s", name, c.kubecelEnv, c.kubecel, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s (build it with `make build`): %w", c.kubecel, err)
	}
	ctrl := &controller{name: name, dir: dir, cmd: cmd, log: log, done: make(chan struct{}),
		metrics: "http://" + addr(ports[0]), health: "http://" + addr(ports[1]), pprof: "http://" + addr(ports[2])}
	go func() { ctrl.waitErr = cmd.Wait(); close(ctrl.done) }()
	return ctrl, nil
}

// waitReady polls /readyz until it answers 200, for at most a minute.
func (c *controller) waitReady(ctx context.Context) error {
	url := c.health + "/readyz"
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return fmt.Errorf("exited: %v", c.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("not ready at %s after a minute", url)
}

// stop sends SIGTERM and waits, then kills.
func (c *controller) stop() error {
	defer c.log.Close()
	select {
	case <-c.done:
		return c.waitErr
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("did not stop within 15s of SIGTERM; killed")
	}
}

// memory is the process's resident set from /proc/PID/status, in bytes: peak (VmHWM),
// current (VmRSS) and the current anonymous part (RssAnon: heap, stacks; the rest is
// mostly the mapped binary).
type memory struct{ peak, current, anon uint64 }

func (c *controller) rss() memory {
	var m memory
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmHWM:":
			m.peak = kb * 1024
		case "VmRSS:":
			m.current = kb * 1024
		case "RssAnon:":
			m.anon = kb * 1024
		}
	}
	return m
}

// cpuSeconds returns the process's user plus system CPU time.
func (c *controller) cpuSeconds() float64 { return processCPU(c.cmd.Process.Pid) }

// metric returns the sum of every sample of a counter or gauge on /metrics.
func (c *controller) metric(ctx context.Context, name string) (float64, error) {
	m, err := c.metricValues(ctx, name)
	return m[name], err
}

// metricValues reads /metrics once and returns, for each of names, the sum of its
// samples (of every label set); a name without samples is 0.
func (c *controller) metricValues(ctx context.Context, names ...string) (metricValues, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.metrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	defer resp.Body.Close()
	sums := make(metricValues, len(names))
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range names {
			if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != '{' && line[len(name)] != ' ') {
				continue
			}
			f := strings.Fields(line)
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				sums[name] += v
			}
		}
	}
	return sums, sc.Err()
}

// saveProfile writes /debug/pprof/<profile> to file in the replica's directory.
func (c *controller) saveProfile(ctx context.Context, profile, file string) error {
	return save(ctx, c.pprof+"/debug/pprof/"+profile, filepath.Join(c.dir, file))
}

// save writes the body of GET url to path.
func save(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profiler takes consecutive 5s CPU profiles (cpu-NN.pprof in the replica's directory)
// until stopped; `go tool pprof` merges them when given all the files.
type profiler struct {
	stopped chan struct{}
	wg      sync.WaitGroup
}

func (c *controller) profileCPU(ctx context.Context) *profiler {
	p := &profiler{stopped: make(chan struct{})}
	p.wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-p.stopped:
				return
			default:
			}
			if err := c.saveProfile(ctx, "profile?seconds=5", fmt.Sprintf("cpu-%02d.pprof", i)); err != nil {
				logf("%s: cpu profile: %v", c.name, err)
				return
			}
		}
	})
	return p
}

// stop ends the profiling after the profile in progress.
func (p *profiler) stop() {
	close(p.stopped)
	p.wg.Wait()
}

// freePorts asks the kernel for n distinct unused loopback ports: every listener stays
// open until all are chosen, so the same port is not handed out twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
