package faults

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/kubecel/kubecel/internal/controlplane"
)

// auditTail counts kubecel's writes as the audit log grows, reading each line once, so
// that polling it stays cheap however long the log is.
type auditTail struct {
	f       *os.File
	r       *bufio.Reader
	keep    func(controlplane.AuditEvent) bool
	partial []byte
	n       int
}

// tailAudit starts counting at the current end of the audit log.
func tailAudit(t testing.TB, keep func(controlplane.AuditEvent) bool) *auditTail {
	t.Helper()
	f, err := os.Open(cp.AuditLog)
	if err != nil {
		t.Fatalf("open audit log: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	return &auditTail{f: f, r: bufio.NewReaderSize(f, 1<<20), keep: keep}
}

// count reads what was appended since the last call and returns the writes counted
// since tailAudit.
func (a *auditTail) count(t testing.TB) int {
	t.Helper()
	for {
		line, err := a.r.ReadBytes('\n')
		a.partial = append(a.partial, line...)
		if errors.Is(err, io.EOF) {
			return a.n
		}
		if err != nil {
			t.Fatalf("read audit log: %v", err)
		}
		var e controlplane.AuditEvent
		if json.Unmarshal(a.partial, &e) == nil && strings.HasPrefix(e.UserAgent, "kubecel") &&
			!strings.Contains(e.RequestURI, "dryRun=All") && a.keep(e) {
			a.n++
		}
		a.partial = a.partial[:0]
	}
}
