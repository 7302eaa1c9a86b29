package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ringLine is the line of a sharded replica's /readyz body that names the ring it
// serves: "ring <version>: serving <k> of <buckets> buckets, <n> members".
var ringLine = regexp.MustCompile(`(?m)^ring ([^\s:]+): serving (\d+) of (\d+) buckets, (\d+) members`)

// ringStatus is what one replica's /readyz says about its ring.
type ringStatus struct {
	ready                     bool
	version                   string
	serving, buckets, members int
}

// parseRing reads the ring line of a /readyz body; ok is false when there is none.
func parseRing(body string) (r ringStatus, ok bool) {
	m := ringLine.FindStringSubmatch(body)
	if m == nil {
		return r, false
	}
	r.version = m[1]
	r.serving, _ = strconv.Atoi(m[2])
	r.buckets, _ = strconv.Atoi(m[3])
	r.members, _ = strconv.Atoi(m[4])
	return r, true
}

// ringAgreed tells whether n replicas serve one ring: every one ready, on the same
// version, with n members, and the buckets they serve adding up to all of them once.
// The string says what is missing, for the progress log.
func ringAgreed(rings []ringStatus, n int) (bool, string) {
	if len(rings) != n {
		return false, fmt.Sprintf("%d of %d replicas answered", len(rings), n)
	}
	sum := 0
	var parts []string
	for i, r := range rings {
		parts = append(parts, fmt.Sprintf("replica-%d: ready=%t ring %q %d/%d buckets, %d members", i+1, r.ready, r.version, r.serving, r.buckets, r.members))
		sum += r.serving
	}
	state := strings.Join(parts, "; ")
	for _, r := range rings {
		if !r.ready || r.version == "" || r.version != rings[0].version || r.members != n || r.buckets != rings[0].buckets {
			return false, state
		}
	}
	return sum == rings[0].buckets, state
}

// readyz returns whether the replica's /readyz answers 200, and its body.
func (c *controller) readyz(ctx context.Context) (bool, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.health+"/readyz", nil)
	if err != nil {
		return false, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK, string(body), err
}

// waitRing polls every replica's /readyz until they agree on the ring (ringAgreed), and
// returns each replica's view of it.
func (f fleet) waitRing(ctx context.Context, timeout time.Duration) ([]ringStatus, error) {
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		rings := make([]ringStatus, 0, len(f))
		for _, c := range f {
			select {
			case <-c.done:
				return nil, fmt.Errorf("%s exited (log: %s): %v", c.name, c.log.Name(), c.waitErr)
			default:
			}
			ready, body, err := c.readyz(ctx)
			if err != nil {
				break
			}
			r, _ := parseRing(body)
			r.ready = ready
			rings = append(rings, r)
		}
		ok, state := ringAgreed(rings, len(f))
		if ok {
			return rings, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the replicas did not agree on a ring of %d members within %s (does bin/kubecel have --sharding?): %s", len(f), timeout, state)
		}
		if time.Since(lastLog) >= 10*time.Second {
			logf("waiting for the ring: %s", state)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
