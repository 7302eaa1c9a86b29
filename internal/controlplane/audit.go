package controlplane

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// auditPolicy logs write requests only, without bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
`

// enableAudit writes the audit policy and points kube-apiserver at it.
func (cp *ControlPlane) enableAudit(args *envtest.Arguments) error {
	policy := filepath.Join(cp.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	cp.AuditLog = filepath.Join(cp.Dir, "audit.log")
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", cp.AuditLog)
	args.Set("audit-log-mode", "blocking")
	args.Set("audit-log-format", "json")
	// kube-apiserver rotates its audit log at 100 MB unless told otherwise, which a run of
	// 10,000 parents passes: the readers of the log (write counts) would lose what the
	// rotated file holds. One file, however large.
	args.Set("audit-log-maxsize", "1000000")
	return nil
}

// AuditEvent is the part of an audit event that write counting needs.
type AuditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	ObjectRef  struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	// RequestReceived is when the API server received the request.
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
	// ResponseStatus holds the response's HTTP status code (200 for a delete that
	// removed the object, 404 or 409 for one refused).
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// AuditEvents reads every write request logged so far (see Options.AuditWrites).
func (cp *ControlPlane) AuditEvents() ([]AuditEvent, error) {
	f, err := os.Open(cp.AuditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err == nil {
			events = append(events, e)
		}
	}
	return events, sc.Err()
}
