package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/controlplane"
	"github.com/kubecel/kubecel/internal/testenv"
)

// The scripts in testdata/script run kubecel as users type it: `exec kubecel ...` starts
// this test binary under the name kubecel, and testscript.Main (in TestMain) runs main
// in it. Each script gets these variables:
//
//	$REPO      the repository root (examples/, rules/testdata/crds, ...)
//	$BIN       the directory of the control-plane binaries (for kubecel dev)
//	$HEALTH    a free 127.0.0.1 address for --health-addr
//	$METRICS   another, for --metrics-addr
//
// The scripts in testdata/script/cluster also get their own namespace in the shared
// test control plane:
//
//	$NS          a fresh namespace, deleted when the script ends
//	$KUBECONFIG  the admin kubeconfig of the shared control plane
//
// Every script has these commands; the ones that read objects use the cluster of
// $KUBECONFIG and the namespace $NS, and each one that waits polls for up to two minutes:
//
//	subst IN OUT              write IN to OUT with $VARIABLES expanded
//	repeat NAME N TEXT        set $NAME to TEXT repeated N times (for large inputs)
//	apply FILE                server-side apply every object of FILE (in $NS unless it names a namespace)
//	applystatus FILE          the same to the status subresource (each object's status)
//	get [-json] RESOURCE NAME print the object (RESOURCE as in kubectl: configmaps, gadgets.plan.kubecel.dev) as YAML (or JSON); ! get: it does not exist
//	waitfor RESOURCE NAME [TEXT]  wait until the object exists and its YAML contains TEXT
//	waitgone RESOURCE NAME    wait until the object does not exist
//	waithttp URL [REGEXP]     wait until GET URL answers 200 (with a body that matches REGEXP); prints the body
//	exitcode N PROG ARGS...   run PROG (as exec does) and check that it exits with code N
//	events NAME               print the Events about the object NAME of $NS, one "TYPE REASON MESSAGE" line each
//	jsonfield FILE PATH...    parse FILE as JSON and print the value at each PATH (a.b.0.c), one a line
//	jsonfield -env NAME FILE PATH   the same, setting $NAME to the value instead
//	writes AGENT [NAMESPACE]  print how many write requests (not dry runs) clients whose user agent begins with AGENT sent (in NAMESPACE only, when given)
//	delete RESOURCE NAME      delete the object
//	metricsserved LIST SCRAPE check that every metric named in the file LIST has a sample in SCRAPE (a /metrics body)
const scriptTimeout = 2 * time.Minute

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		Setup:               scriptSetup(false),
		Cmds:                scriptCmds,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

func TestScriptsCluster(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script/cluster",
		Setup:               scriptSetup(true),
		Cmds:                scriptCmds,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

func scriptSetup(cluster bool) func(*testscript.Env) error {
	return func(env *testscript.Env) error {
		repo, err := filepath.Abs("../..")
		if err != nil {
			return err
		}
		env.Setenv("REPO", repo)
		// kubecel in a script is this test binary: with -race, a race stops it at once
		// (exit 66), which the script's wait or exitcode then reports.
		env.Setenv("GORACE", strings.TrimPrefix(testenv.RaceEnv, "GORACE="))
		env.Setenv("BIN", filepath.Join(repo, "bin"))
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		env.Setenv("HEALTH", fmt.Sprintf("127.0.0.1:%d", ports[0]))
		env.Setenv("METRICS", fmt.Sprintf("127.0.0.1:%d", ports[1]))
		if !cluster {
			return nil
		}
		t, ok := env.T().(testing.TB)
		if !ok {
			return errors.New("testscript's T is not a testing.TB")
		}
		env.Values[scriptTKey{}] = t
		env.Setenv("NS", testenv.Namespace(t))
		env.Setenv("KUBECONFIG", testenv.ControlPlane(t).Kubeconfig)
		return nil
	}
}

// scriptTKey holds, in a cluster script's values, its testing.TB.
type scriptTKey struct{}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago. The
// listeners stay open until all n are chosen: one closed at once could be handed out
// again by the next (a process once got the same port for health and metrics).
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
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

var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"subst":         cmdSubst,
	"repeat":        cmdRepeat,
	"apply":         cmdApply,
	"applystatus":   cmdApplyStatus,
	"get":           cmdGet,
	"waitfor":       cmdWaitFor,
	"waitgone":      cmdWaitGone,
	"waitcount":     cmdWaitCount,
	"waithttp":      cmdWaitHTTP,
	"exitcode":      cmdExitCode,
	"events":        cmdEvents,
	"jsonfield":     cmdJSONField,
	"writes":        cmdWrites,
	"delete":        cmdDelete,
	"metricsserved": cmdMetricsServed,
}

func cmdWrites(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: writes AGENT [NAMESPACE]")
	}
	t, ok := ts.Value(scriptTKey{}).(testing.TB)
	if !ok {
		ts.Fatalf("writes needs the control plane of testdata/script/cluster")
	}
	// With a namespace, only the writes there: scripts run in parallel, and another may
	// use the same command (and so the same user agent) at the same time.
	n := testenv.Writes(t, func(e controlplane.AuditEvent) bool {
		return strings.HasPrefix(e.UserAgent, args[0]) && (len(args) == 1 || e.ObjectRef.Namespace == args[1])
	})
	_, err := fmt.Fprintln(ts.Stdout(), n)
	ts.Check(err)
}

func cmdJSONField(ts *testscript.TestScript, neg bool, args []string) {
	env := ""
	if len(args) == 4 && args[0] == "-env" {
		env, args = args[1], args[2:]
	}
	if neg || len(args) < 2 {
		ts.Fatalf("usage: jsonfield [-env NAME] FILE PATH...")
	}
	var doc any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &doc))
	for _, path := range args[1:] {
		v := doc
		for _, key := range strings.Split(path, ".") {
			switch c := v.(type) {
			case map[string]any:
				v = c[key]
			case []any:
				i, err := strconv.Atoi(key)
				if err != nil || i < 0 || i >= len(c) {
					ts.Fatalf("%s: %s: no element %s", args[0], path, key)
				}
				v = c[i]
			default:
				ts.Fatalf("%s: %s: %s is not in a map or list", args[0], path, key)
			}
		}
		s, ok := v.(string)
		if !ok {
			data, err := json.Marshal(v)
			ts.Check(err)
			s = string(data)
		}
		if env != "" {
			ts.Setenv(env, s)
			continue
		}
		_, err := fmt.Fprintln(ts.Stdout(), s)
		ts.Check(err)
	}
}

func cmdEvents(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: events NAME")
	}
	c := newScriptClient(ts)
	list, err := c.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "events"}).Namespace(c.ns).List(context.Background(),
		metav1.ListOptions{FieldSelector: "involvedObject.name=" + args[0]})
	ts.Check(err)
	for _, e := range list.Items {
		typ, _, _ := unstructured.NestedString(e.Object, "type")
		reason, _, _ := unstructured.NestedString(e.Object, "reason")
		msg, _, _ := unstructured.NestedString(e.Object, "message")
		_, err := fmt.Fprintf(ts.Stdout(), "%s %s %s\n", typ, reason, msg)
		ts.Check(err)
	}
}

func cmdSubst(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: subst IN OUT")
	}
	out := os.Expand(ts.ReadFile(args[0]), ts.Getenv)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out), 0o644))
}

func cmdRepeat(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: repeat NAME N TEXT")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 0 {
		ts.Fatalf("repeat: %q is not a count", args[1])
	}
	ts.Setenv(args[0], strings.Repeat(args[2], n))
}

// scriptClient is a dynamic client for the script's control plane and a mapper of
// resource names.
type scriptClient struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	ns     string
}

func newScriptClient(ts *testscript.TestScript) *scriptClient {
	kubeconfig := ts.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		ts.Fatalf("no $KUBECONFIG: only the scripts in testdata/script/cluster have a control plane")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	ts.Check(err)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	ts.Check(err)
	return &scriptClient{
		dyn:    dynamic.NewForConfigOrDie(cfg),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		ns:     ts.Getenv("NS"),
	}
}

// resource maps a kubectl-style resource name (configmaps, deployments.apps) to the
// client of its objects in the script's namespace (or of cluster-scoped objects).
func (c *scriptClient) resource(ts *testscript.TestScript, name string) dynamic.ResourceInterface {
	gvr, err := c.mapper.ResourceFor(schema.ParseGroupResource(name).WithVersion(""))
	ts.Check(err)
	kind, err := c.mapper.KindFor(gvr)
	ts.Check(err)
	m, err := c.mapper.RESTMapping(kind.GroupKind(), kind.Version)
	ts.Check(err)
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return c.dyn.Resource(m.Resource)
	}
	return c.dyn.Resource(m.Resource).Namespace(c.ns)
}

func cmdApply(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: apply FILE")
	}
	applyFile(ts, args[0], "")
}

func cmdApplyStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: applystatus FILE")
	}
	applyFile(ts, args[0], "status")
}

// applyFile server-side applies every object of a file, or only its subresource.
func applyFile(ts *testscript.TestScript, file, subresource string) {
	c := newScriptClient(ts)
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(ts.ReadFile(file)), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			ts.Fatalf("%s: %v", file, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		ts.Check(err)
		ri := dynamic.ResourceInterface(c.dyn.Resource(m.Resource))
		if m.Scope.Name() != meta.RESTScopeNameRoot {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(c.ns)
			}
			ri = c.dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
		}
		if subresource == "status" {
			_, err = ri.ApplyStatus(context.Background(), obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "testscript", Force: true})
		} else {
			_, err = ri.Apply(context.Background(), obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "testscript", Force: true})
		}
		ts.Check(err)
	}
}

func cmdGet(ts *testscript.TestScript, neg bool, args []string) {
	asJSON := len(args) == 3 && args[0] == "-json"
	if asJSON {
		args = args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: get [-json] RESOURCE NAME")
	}
	obj, err := newScriptClient(ts).resource(ts, args[0]).Get(context.Background(), args[1], metav1.GetOptions{})
	if neg {
		if err == nil {
			ts.Fatalf("%s %s exists", args[0], args[1])
		}
		if !apierrors.IsNotFound(err) {
			ts.Fatalf("get %s %s: %v", args[0], args[1], err)
		}
		return
	}
	ts.Check(err)
	marshal := yaml.Marshal
	if asJSON {
		marshal = json.Marshal
	}
	data, err := marshal(obj.Object)
	ts.Check(err)
	_, err = ts.Stdout().Write(data)
	ts.Check(err)
}

func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waitfor RESOURCE NAME [TEXT]")
	}
	ri := newScriptClient(ts).resource(ts, args[0])
	poll(ts, func() (bool, string) {
		obj, err := ri.Get(context.Background(), args[1], metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		data, err := yaml.Marshal(obj.Object)
		ts.Check(err)
		if len(args) == 3 && !bytes.Contains(data, []byte(args[2])) {
			return false, fmt.Sprintf("%s %s does not contain %q:\n%s", args[0], args[1], args[2], data)
		}
		return true, ""
	})
}

// cmdWaitCount waits until the script's namespace holds N objects of RESOURCE that
// the label selector SELECTOR selects.
func cmdWaitCount(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitcount RESOURCE SELECTOR N")
	}
	want, err := strconv.Atoi(args[2])
	if err != nil {
		ts.Fatalf("waitcount: %q is not a count", args[2])
	}
	ri := newScriptClient(ts).resource(ts, args[0])
	poll(ts, func() (bool, string) {
		list, err := ri.List(context.Background(), metav1.ListOptions{LabelSelector: args[1]})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == want, fmt.Sprintf("%d %s selected by %s, want %d", len(list.Items), args[0], args[1], want)
	})
}

func cmdWaitGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitgone RESOURCE NAME")
	}
	ri := newScriptClient(ts).resource(ts, args[0])
	poll(ts, func() (bool, string) {
		_, err := ri.Get(context.Background(), args[1], metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("%s %s still exists (%v)", args[0], args[1], err)
	})
}

func cmdWaitHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waithttp URL [REGEXP]")
	}
	want := regexp.MustCompile("")
	if len(args) == 2 {
		var err error
		want, err = regexp.Compile("(?m)" + args[1])
		ts.Check(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	var body []byte
	defer func() { _, _ = ts.Stdout().Write(body) }()
	poll(ts, func() (bool, string) {
		resp, err := client.Get(args[0])
		if err != nil {
			return false, err.Error()
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		ok := resp.StatusCode == http.StatusOK && want.Match(body)
		return ok, fmt.Sprintf("%s: %s %s", args[0], resp.Status, body)
	})
}

func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	var ee *exec.ExitError
	switch err := ts.Exec(args[1], args[2:]...); {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("%s: %v", args[1], err)
	}
	if got != want {
		ts.Fatalf("%s exited with code %d, want %d", args[1], got, want)
	}
}

// poll calls cond every 100ms until it returns true, and fails the script with its last
// message after scriptTimeout.
func poll(ts *testscript.TestScript, cond func() (bool, string)) {
	deadline := time.Now().Add(scriptTimeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("not within %s: %s", scriptTimeout, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
