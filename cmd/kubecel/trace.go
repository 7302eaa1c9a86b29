package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/internal/crdschema"
	"github.com/kubecel/kubecel/rules"
)

type traceOptions struct {
	source    rulesfrom.Flags
	cluster   *clikit.ClusterFlags
	namespace string
	output    clikit.OutputFlag
	limits    clikit.LoadLimits
	identity  clikit.IdentityFlags
}

func newTraceCommand() *cobra.Command {
	o := traceOptions{cluster: clikit.NewClusterFlags()}
	cmd := &cobra.Command{
		Use:   "trace TYPE[/NAME] [--rules FILE|DIR... | --rules-configmap NS/NAME | --rules-configmap-selector NS/SELECTOR] [-n NAMESPACE] [-o text|wide|json|yaml|dot]",
		Short: "Show a live parent with its rules, children and refs, their readiness and reasons",
		Long: `trace answers "why is this parent not ready?". It reads the parent from the cluster,
finds the rules that serve its resource, and for each rule shows the rule's conditions
on the parent and beneath them every child and every ref:

  child   Kind/name (id): Ready, NotReady (the readyWhen that is false), Missing (not
          created yet), Waiting (for the children or refs it reads), Failed (the
          expression and its message), ChildExists (the name is taken by an object that
          is not this parent's child), NotProduced (pruned or released at the next
          reconcile); a child kept by its lifecycle says so
  ref     refs.id Kind/name: Found, Missing (what reads it waits), Absent (optional),
          Waiting (for the refs its name reads), Failed
  other   Released (a child the rule let go of: no longer kubecel's) and NotOurs (an
          object that carries this parent's labels but no proof that this installation
          made it: never counted as a child)

The rules are evaluated for the parent with its observed children and the refs as they
are now, as the controller would (read-only; nothing is written), so trace shows what
the next reconcile will see even before the controller has written the status.
A child counts only when its kubecel.dev/proof verifies under the installation's key
(--installation, --identity-secret, as for plan).

The rules are, by default, those the installation runs: each rule's current revision,
stored by the controller as a ControllerRevision in the identity Secret's namespace and
read only when its proof verifies under the installation's key. While a rule's rollout is
under way, a parent the rollout has not reached is traced at the revision it rolls from,
and a rule rolled back at the revision it is held at, as the controller runs them. The
first line says where the rules came from, and at which revision each rule is traced.
--rules (files, directories, - for stdin), --rules-configmap and
--rules-configmap-selector (read once, as run reads them) give the rules instead; with
several, they join in that order, as for run. The first line then names the ConfigMaps;
with --rules alone there is none.

TYPE is what kubectl takes: a kind (WebApp), a plural or short resource name (webapps),
or resource.group (webapps.example.kubecel.dev); TYPE/NAME or TYPE NAME names the
parent. -n is the parent's namespace (default: the kubeconfig's, else default). Without
NAME, trace prints a summary per rule: its parents by state (in every namespace unless
-n is given).

Output: a tree (text), -o wide adds the namespace, apiVersion and age columns, -o json
and -o yaml print the same as data, -o dot a Graphviz digraph (dot -Tsvg). Exit status
0 when the trace is printed, whatever the parent's state; 1 when the rules do not load
(a revision whose proof does not verify is refused) or the parent cannot be read.`,
		Example: `  # one parent: its rules, children and refs, with readiness and reasons
  kubecel trace webapps/shop -n team-a

  # every parent of a resource, in a namespace
  kubecel trace webapps -n team-a -o wide

  # a graph of one parent for Graphviz
  kubecel trace webapps/shop -n team-a -o dot > shop.dot`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	f := cmd.Flags()
	o.source.AddFlags(f)
	o.cluster.AddFlags(f, "kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	o.identity.AddFlags(f)
	f.Lookup("identity-secret").Usage = "NAMESPACE/NAME of the installation's identity Secret, read (get) and never created: its key tells the installation's children and revisions from look-alikes (default: <installation>-identity in the pod's namespace in a cluster, kubecel-system outside one)"
	f.StringVarP(&o.namespace, "namespace", "n", "", "the parent's namespace (default: the kubeconfig's namespace, else default); without NAME, only this namespace")
	o.output.AddFlag(f, "text", "wide", "json", "yaml", "dot")
	o.limits.AddFlags(f)
	return cmd
}

// traceTarget names what trace looks at: a type, and a parent when name is set.
type traceTarget struct{ typ, name string }

func parseTraceArgs(args []string) (traceTarget, error) {
	t := traceTarget{typ: args[0]}
	if typ, name, ok := strings.Cut(args[0], "/"); ok {
		if len(args) > 1 {
			return t, fmt.Errorf("give TYPE/NAME or TYPE NAME, not both (%s %s)", args[0], args[1])
		}
		t.typ, t.name = typ, name
		if typ == "" || name == "" || strings.Contains(name, "/") {
			return t, fmt.Errorf("%q: want TYPE/NAME, such as webapps/shop", args[0])
		}
	} else if len(args) > 1 {
		t.name = args[1]
	}
	return t, nil
}

// traceClient reads the cluster for trace: objects by resource, and kinds mapped to
// resources as kubectl maps them.
type traceClient struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newTraceClient(cfg *rest.Config) (*traceClient, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	return &traceClient{dyn: dyn, mapper: mapper}, nil
}

// resolve maps TYPE to a resource as kubectl does: resource[.version.group] or
// resource[.group] (plural, singular or short name), else Kind[.version.group].
func (c *traceClient) resolve(arg string) (*meta.RESTMapping, error) {
	fullGVR, gr := schema.ParseResourceArg(arg)
	var gvk schema.GroupVersionKind
	if fullGVR != nil {
		gvk, _ = c.mapper.KindFor(*fullGVR)
	}
	if gvk.Empty() {
		gvk, _ = c.mapper.KindFor(gr.WithVersion(""))
	}
	if !gvk.Empty() {
		return c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	fullGVK, gk := schema.ParseKindArg(arg)
	if fullGVK != nil {
		if m, err := c.mapper.RESTMapping(fullGVK.GroupKind(), fullGVK.Version); err == nil {
			return m, nil
		}
	}
	if m, err := c.mapper.RESTMapping(gk); err == nil {
		return m, nil
	}
	return nil, fmt.Errorf("the server does not serve a resource type %q (give a kind, a plural resource or resource.group, as kubectl takes them)", arg)
}

// mapping maps a kind of the rules to its resource.
func (c *traceClient) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	return c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

func (o *traceOptions) run(cmd *cobra.Command, args []string) error {
	target, err := parseTraceArgs(args)
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	out := cmd.OutOrStdout()
	tio := traceIO{stdin: cmd.InOrStdin(), stderr: cmd.ErrOrStderr()}
	if target.name == "" {
		sum, err := o.summary(cmd.Context(), tio, target.typ)
		if err != nil {
			return &clikit.ExitError{Code: 1, Err: err}
		}
		return o.printSummary(out, sum)
	}
	doc, err := o.trace(cmd.Context(), tio, target)
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	return o.print(out, doc)
}

// traceIO is where trace reads --rules - and says what it warns of.
type traceIO struct {
	stdin  io.Reader
	stderr io.Writer
}

// traceSetup is what both forms of trace need: the rules, the cluster and the type.
type traceSetup struct {
	rules   *rulesfrom.Loaded
	client  *traceClient
	mapping *meta.RESTMapping
	// served are the rules whose parent resource is the type's, in the rules' order.
	served []*rules.Rule
	cfg    *rest.Config
}

func (o *traceOptions) setup(ctx context.Context, tio traceIO, typ string) (*traceSetup, error) {
	if err := rulesfrom.CheckPaths(o.source.Files); err != nil {
		return nil, err
	}
	cfg, err := o.cluster.RESTConfig()
	if err != nil {
		return nil, err
	}
	if err := clikit.Reach(cfg); err != nil {
		return nil, err
	}
	cfg.UserAgent = "kubecel-trace"
	cfg.QPS, cfg.Burst = 50, 100
	opts := o.limits.Options()
	if schemas, err := crdschema.FromCluster(ctx, cfg); err == nil {
		opts.Schemas = schemas
	}
	loaded, err := o.source.Load(ctx, rulesfrom.Env{Stdin: tio.stdin, Config: cfg, Options: opts, Identity: &o.identity,
		Warn: func(s string) { fmt.Fprintln(tio.stderr, s) }})
	if err != nil {
		return nil, err
	}
	// A rule held after a rollback runs the revision it is held at. Without the
	// installation's key no revision is proven, so none holds a rule (and a trace of one
	// parent says why the key cannot be read).
	if id, err := loaded.Identity(ctx, cfg, &o.identity); err == nil && !o.source.Running() {
		if err := loaded.HoldRolledBack(ctx, cfg, &o.identity, id, rulesfrom.WarnTo(tio.stderr)); err != nil {
			return nil, err
		}
	}
	client, err := newTraceClient(cfg)
	if err != nil {
		return nil, err
	}
	m, err := client.resolve(typ)
	if err != nil {
		return nil, err
	}
	s := &traceSetup{rules: loaded, client: client, mapping: m, cfg: cfg}
	for _, r := range loaded.Set.Rules {
		if r.Parent.GVR.GroupResource() == m.Resource.GroupResource() {
			s.served = append(s.served, r)
		}
	}
	if len(s.served) == 0 {
		return nil, fmt.Errorf("no rule of %s serves %s", loaded.From, m.Resource.GroupResource())
	}
	return s, nil
}

// parentNamespace is the namespace of the parent: -n, else the kubeconfig's, else
// default; "" for a cluster-scoped resource.
func (o *traceOptions) parentNamespace(m *meta.RESTMapping) (string, error) {
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return "", nil
	}
	if o.namespace != "" {
		return o.namespace, nil
	}
	ns, _, err := o.cluster.Loader().Namespace()
	if err != nil {
		return "", fmt.Errorf("read the kubeconfig's namespace: %w", err)
	}
	return ns, nil
}
