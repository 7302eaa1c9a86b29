package trace

import (
	"context"
	"fmt"
	"strings"

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

// Options are what trace takes besides its arguments: its flags.
type Options struct {
	// Rules says where the rules come from (by default, the installation's running
	// revisions).
	Rules rulesfrom.Flags
	// Cluster connects to the cluster the parent is in.
	Cluster *clikit.ClusterFlags
	// Namespace is -n: the parent's namespace, or the only one a summary looks in.
	Namespace string
	// Output is the format: text, wide, json, yaml or dot.
	Output string
	// Limits load the rules as the controller loads them.
	Limits clikit.LoadLimits
	// Identity names the installation whose key proves its children and revisions.
	Identity clikit.IdentityFlags
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

// Run traces what args name: TYPE/NAME or TYPE NAME prints the parent's trace, TYPE alone
// a summary of the type's parents per rule, on s.Out in o.Output's format. Any error
// exits with status 1.
func Run(ctx context.Context, o *Options, args []string, s clikit.Streams) error {
	target, err := parseTraceArgs(args)
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	if target.name == "" {
		sum, err := o.summary(ctx, s, target.typ)
		if err != nil {
			return &clikit.ExitError{Code: 1, Err: err}
		}
		return o.printSummary(s.Out, sum)
	}
	doc, err := o.trace(ctx, s, target)
	if err != nil {
		return &clikit.ExitError{Code: 1, Err: err}
	}
	return o.print(s.Out, doc)
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

func (o *Options) setup(ctx context.Context, streams clikit.Streams, typ string) (*traceSetup, error) {
	if err := rulesfrom.CheckPaths(o.Rules.Files); err != nil {
		return nil, err
	}
	cfg, err := o.Cluster.RESTConfig()
	if err != nil {
		return nil, err
	}
	if err := clikit.Reach(cfg); err != nil {
		return nil, err
	}
	cfg.UserAgent = "kubecel-trace"
	cfg.QPS, cfg.Burst = 50, 100
	opts := o.Limits.Options()
	if schemas, err := crdschema.FromCluster(ctx, cfg); err == nil {
		opts.Schemas = schemas
	}
	loaded, err := o.Rules.Load(ctx, rulesfrom.Env{Stdin: streams.In, Config: cfg, Options: opts, Identity: &o.Identity,
		Warn: func(s string) { fmt.Fprintln(streams.ErrOut, s) }})
	if err != nil {
		return nil, err
	}
	// A rule held after a rollback runs the revision it is held at. Without the
	// installation's key no revision is proven, so none holds a rule (and a trace of one
	// parent says why the key cannot be read).
	if id, err := loaded.Identity(ctx, cfg, &o.Identity); err == nil && !o.Rules.Running() {
		if err := loaded.HoldRolledBack(ctx, cfg, &o.Identity, id, rulesfrom.WarnTo(streams.ErrOut)); err != nil {
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
func (o *Options) parentNamespace(m *meta.RESTMapping) (string, error) {
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return "", nil
	}
	if o.Namespace != "" {
		return o.Namespace, nil
	}
	ns, _, err := o.Cluster.Loader().Namespace()
	if err != nil {
		return "", fmt.Errorf("read the kubeconfig's namespace: %w", err)
	}
	return ns, nil
}
