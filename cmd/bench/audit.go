package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/kubecel/kubecel/internal/controlplane"
)

// auditCounter counts the controller's write requests in the bench namespace from the
// API server's audit log, reading only what was added since the last read. Requests
// are the controller's when their user agent starts with "kubecel" and is not the
// bench's own. They are counted twice: by what they write, and by user agent, which
// tells replicas apart ("kubecel/<identity>" when sharded). They are also counted by the
// name of the object written, which tells the --crds phase's rules apart.
type auditCounter struct {
	path   string
	offset int64
	counts writeCounts // by "verb resource[/subresource]"
	agents writeCounts // by user agent
	names  writeCounts // by object name
}

// writeCounts counts writes by a key: "verb resource[/subresource]", or a user agent.
type writeCounts map[string]int

func (a *auditCounter) read() error {
	f, err := os.Open(a.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return err
	} else if st.Size() < a.offset {
		return fmt.Errorf("audit log %s is shorter (%d bytes) than what was read of it (%d): it was rotated, and the writes it held are lost to the counts", a.path, st.Size(), a.offset)
	}
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		return err
	}
	if a.counts == nil {
		a.counts, a.agents, a.names = writeCounts{}, writeCounts{}, writeCounts{}
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil // a partial line is read again next time
		}
		if err != nil {
			return err
		}
		a.offset += int64(len(line))
		var e controlplane.AuditEvent
		if json.Unmarshal(line, &e) != nil || !controllerWrite(e) {
			continue
		}
		what := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			what += "/" + e.ObjectRef.Subresource
		}
		a.counts[e.Verb+" "+what]++
		a.agents[e.UserAgent]++
		a.names[e.ObjectRef.Name]++
	}
}

func controllerWrite(e controlplane.AuditEvent) bool {
	return e.ObjectRef.Namespace == benchNS && strings.HasPrefix(e.UserAgent, "kubecel") && !strings.HasPrefix(e.UserAgent, userAgent)
}

// snapshot returns the counts so far by what was written.
func (a *auditCounter) snapshot() writeCounts { return a.counts.clone() }

// agentSnapshot returns the counts so far by user agent.
func (a *auditCounter) agentSnapshot() writeCounts { return a.agents.clone() }

// nameSnapshot returns the counts so far by object name.
func (a *auditCounter) nameSnapshot() writeCounts { return a.names.clone() }

func (w writeCounts) clone() writeCounts {
	out := make(writeCounts, len(w))
	for k, v := range w {
		out[k] = v
	}
	return out
}

func (w writeCounts) minus(earlier writeCounts) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if d := v - earlier[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func (w writeCounts) total() int {
	n := 0
	for _, v := range w {
		n += v
	}
	return n
}

// String lists the counts, largest first: "patch configmaps: 1000, ...".
func (w writeCounts) String() string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if w[keys[i]] != w[keys[j]] {
			return w[keys[i]] > w[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, w[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
