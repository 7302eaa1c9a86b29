package serve

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

var servingAddr = regexp.MustCompile(`"msg"="Serving".*"addr"="([^"]+)"`)

// start runs serve on port 0 and returns the address it logged, and a stop function
// that ends it and returns its result.
func start(t *testing.T, serve func(ctx context.Context, addr string) error) (string, func() error) {
	t.Helper()
	addrs := make(chan string, 1)
	logger := funcr.New(func(_, args string) {
		if m := servingAddr.FindStringSubmatch(args); m != nil {
			addrs <- m[1]
		}
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logger))
	done := make(chan error, 1)
	go func() { done <- serve(ctx, "127.0.0.1:0") }()
	select {
	case addr := <-addrs:
		return addr, func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("server ended before serving: %v", err)
	case <-time.After(time.Minute):
		cancel()
		t.Fatal("the server never logged its address")
	}
	return "", nil
}

type response struct {
	Code int
	Body string
}

func get(t *testing.T, url string) response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, string(body)}
}

func TestHealth(t *testing.T) {
	var ready atomic.Bool
	var pending, notes atomic.Pointer[[]string]
	pending.Store(&[]string{"webapp", "db"})
	notes.Store(&[]string{})
	addr, stop := start(t, func(ctx context.Context, addr string) error {
		return Health(ctx, addr, func() Readiness {
			return Readiness{Ready: ready.Load(), Pending: *pending.Load(), Notes: *notes.Load()}
		})
	})
	base := "http://" + addr
	steps := []struct {
		name    string
		ready   bool
		pending []string
		notes   []string
		path    string
		want    response
	}{
		{"healthz while not ready", false, nil, nil, "/healthz", response{200, "ok\n"}},
		{"readyz not ready", false, []string{"webapp", "db"}, nil, "/readyz",
			response{503, "not ready: rules not loaded or caches not synced\npending rules (kinds not served): webapp, db\n"}},
		{"readyz ready with a pending rule", true, []string{"db"}, nil, "/readyz", response{200, "ok\npending rules (kinds not served): db\n"}},
		{"readyz ready", true, nil, nil, "/readyz", response{200, "ok\n"}},
		{"readyz with a note", true, nil, []string{"ring 0a1b: serving 3 of 256 buckets, 2 members"}, "/readyz",
			response{200, "ok\nring 0a1b: serving 3 of 256 buckets, 2 members\n"}},
	}
	for _, s := range steps {
		ready.Store(s.ready)
		pending.Store(&s.pending)
		notes.Store(&s.notes)
		if diff := cmp.Diff(s.want, get(t, base+s.path)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("Health after its context ended = %v, want nil", err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the server still answers after its context ended")
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "kubecel_test_total", Help: "A test counter."})
	reg.MustRegister(c)
	c.Add(3)
	addr, stop := start(t, func(ctx context.Context, addr string) error { return Metrics(ctx, addr, reg) })
	got := get(t, "http://"+addr+"/metrics")
	for _, want := range []string{"kubecel_test_total 3", "go_goroutines ", "process_"} {
		if got.Code != 200 || !strings.Contains(got.Body, want) {
			t.Errorf("/metrics: code %d, body lacks %q", got.Code, want)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("Metrics after its context ended = %v, want nil", err)
	}
}

func TestListenError(t *testing.T) {
	if err := Health(t.Context(), "127.0.0.1:-1", func() Readiness { return Readiness{Ready: true} }); err == nil {
		t.Error("Health on an invalid address returned nil")
	}
}
