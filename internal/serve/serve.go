// Package serve runs kubecel's HTTP endpoints beside the controller: /metrics for a
// Prometheus registry, and /healthz and /readyz for the kubelet's probes. Each server
// runs until its context ends, then shuts down gracefully (at most five seconds), and
// logs the address it bound, so a caller that asked for port 0 can find it.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// Metrics serves reg on addr at /metrics until ctx ends. Go runtime and process
// collectors are added to reg.
func Metrics(ctx context.Context, addr string, reg *prometheus.Registry) error {
	_ = reg.Register(collectors.NewGoCollector())
	_ = reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return serve(ctx, "metrics", addr, mux)
}

// Readiness is what /readyz reports.
type Readiness struct {
	Ready bool
	// Pending lists the rules that wait for their kinds to be served.
	Pending []string
	// Notes are more lines for the body, such as the ring a sharded replica serves.
	Notes []string
}

// Health serves /healthz (the process runs) and /readyz (ready().Ready is true) on addr
// until ctx ends. The /readyz body lists the rules waiting for their kinds, then the
// notes.
func Health(ctx context.Context, addr string, ready func() Readiness) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		r := ready()
		ok, pending := r.Ready, r.Pending
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready: rules not loaded or caches not synced")
		} else {
			fmt.Fprintln(w, "ok")
		}
		if len(pending) > 0 {
			fmt.Fprintf(w, "pending rules (kinds not served): %s\n", strings.Join(pending, ", "))
		}
		for _, note := range r.Notes {
			fmt.Fprintln(w, note)
		}
	})
	return serve(ctx, "health", addr, mux)
}

// serve listens on addr and serves h until ctx ends. The log line names the endpoint and
// the bound address, so a caller that passed port 0 can learn which port it got.
func serve(ctx context.Context, what, addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	klog.FromContext(ctx).Info("Serving", "endpoint", what, "addr", l.Addr().String())
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
