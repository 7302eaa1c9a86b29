package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

const dryRunRules = widgetRuleHead + `      - id: config
        template:
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: "${parent.metadata.name}"}
          data: {size: "${string(parent.spec.size)}"}
      - id: secret
        template:
          apiVersion: v1
          kind: Secret
          metadata: {name: "${parent.metadata.name}"}
          stringData: {password: "${parent.spec.password}"}
      - id: shared
        crossNamespace: true
        template:
          apiVersion: engine.kubecel.dev/v1
          kind: ClusterWidget
          metadata: {name: "${parent.metadata.namespace + '-' + parent.metadata.name}"}
          spec: {size: "${parent.spec.size}"}
    status:
      fields:
        size: ${parent.spec.size}
`

// TestDryRunWritesNothingAndLogsThePlan runs the controller with DryRun: every
// reconcile logs the changes it would make (Secret values redacted), and the API server
// sees no write but dry runs: no child, no status, no finalizer, no Event.
func TestDryRunWritesNothingAndLogsThePlan(t *testing.T) {
	f := &fixture{t: t, ns: testenv.Namespace(t), rule: "dryrun"}
	rs := f.loadRules(dryRunRules)
	f.create(widgets, widget(f.ns, "w", map[string]any{"size": int64(3), "password": "hunter2"}))
	mine := func(e controlplane.AuditEvent) bool {
		return e.ObjectRef.Namespace == f.ns || e.ObjectRef.Resource == "clusterwidgets"
	}
	before := testenv.Writes(t, mine)

	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctrl, err := engine.New(testenv.Config(t), engine.Options{Workers: 2, DryRun: true, Identity: testenv.Identity(t)})
	if err != nil {
		t.Fatal(err)
	}
	f.ctrl = ctrl
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logger))
	ctrl.SetRules(ctx, rs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ctrl.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	// planned returns the "Planned change" log entries: "action object" -> diffs.
	planned := func() map[string][]string {
		got := map[string][]string{}
		for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
			if e.Message != "Planned change" {
				continue
			}
			kv := map[string]any{}
			for i := 0; i+1 < len(e.ParameterKVList); i += 2 {
				kv[fmt.Sprint(e.ParameterKVList[i])] = e.ParameterKVList[i+1]
			}
			k := fmt.Sprintf("%s %s", kv["action"], kv["object"])
			got[k] = append(got[k], fmt.Sprint(kv["diff"]))
		}
		return got
	}
	wantKeys := []string{
		"create ClusterWidget.engine.kubecel.dev/" + f.ns + "-w",
		"create ConfigMap " + f.ns + "/w",
		"create Secret " + f.ns + "/w",
		"finalizer Widget.engine.kubecel.dev " + f.ns + "/w",
		"status Widget.engine.kubecel.dev " + f.ns + "/w",
	}
	waitPlanned := func(times int) map[string][]string {
		var got map[string][]string
		f.eventually(func() (bool, string) {
			got = planned()
			for _, k := range wantKeys {
				if len(got[k]) < times {
					return false, fmt.Sprintf("%q logged %d times, want %d; logged: %v", k, len(got[k]), times, got)
				}
			}
			return true, ""
		})
		return got
	}
	got := waitPlanned(1)
	f.waitIdle()
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("planned changes (-want +got):\n%s", diff)
	}
	secret := strings.Join(got["create Secret "+f.ns+"/w"], "\n")
	if !strings.Contains(secret, `+ data.password: "<redacted>"`) {
		t.Errorf("the Secret's plan does not show its redacted key:\n%s", secret)
	}
	if !slices.ContainsFunc(got["status Widget.engine.kubecel.dev "+f.ns+"/w"], func(d string) bool {
		return strings.Contains(d, "+ status.size: 3")
	}) {
		t.Errorf("the status plan does not show status.size: %v", got)
	}
	if logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String(); strings.Contains(logs, "hunter2") || strings.Contains(logs, "aHVudGVyMg") {
		t.Errorf("a Secret value appears in the logs:\n%s", logs)
	}

	// Nothing was remembered as written: a resync plans the same changes again.
	ctrl.EnqueueAll()
	waitPlanned(2)
	f.waitIdle()

	if after := testenv.Writes(t, mine); after != before {
		t.Errorf("the dry-run controller sent %d writes, want 0", after-before)
		logRepeatedWrites(t, f.ns)
	}
	if _, err := f.get(configMaps, f.ns, "w"); !apierrors.IsNotFound(err) {
		t.Errorf("get the ConfigMap child: %v, want NotFound", err)
	}
	parent, err := f.get(widgets, f.ns, "w")
	if err != nil {
		t.Fatal(err)
	}
	if _, has := parent.Object["status"]; has || len(parent.GetFinalizers()) > 0 {
		t.Errorf("the parent was written: status %v, finalizers %v", parent.Object["status"], parent.GetFinalizers())
	}
}
