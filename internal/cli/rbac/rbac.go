package rbac

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/rules"
)

// Options are rbac's flags.
type Options struct {
	// Rules are the --rules files and directories (- for the standard input).
	Rules []string
	// Cluster connects to the cluster whose discovery maps kinds to resources; without
	// a kubeconfig, resources are guessed from the kinds' names.
	Cluster *clikit.ClusterFlags
	// Name names the ClusterRole (and the Roles for refs confined to namespaces).
	Name string
	// ServiceAccount is NAMESPACE/NAME of the controller's ServiceAccount, which the
	// RoleBindings for refs confined to namespaces bind.
	ServiceAccount string
	// CRDs is a directory of CRDs that map the kinds they define to their resources.
	CRDs string
	// Output is the format: yaml or json.
	Output string
	// Limits load the rules as the controller loads them.
	Limits clikit.LoadLimits
}

// Run prints on s.Out the ClusterRole (and Roles with their RoleBindings) that the
// rules need, as YAML or JSON, with notes on s.ErrOut.
func Run(o *Options, s clikit.Streams) error {
	stdin, stdout, stderr := s.In, s.Out, s.ErrOut
	if ns, name, ok := strings.Cut(o.ServiceAccount, "/"); !ok || ns == "" || name == "" {
		return fmt.Errorf("--serviceaccount %q: want NAMESPACE/NAME", o.ServiceAccount)
	}
	docs, err := rulesfrom.Read(stdin, o.Rules)
	if err != nil {
		return err
	}
	rs, err := rules.LoadDocuments(docs, o.Limits.Options())
	if err != nil {
		return fmt.Errorf("load rules:\n%w", err)
	}
	m := &kindMapping{}
	if o.CRDs != "" {
		if m.crds, err = clikit.ReadCRDs(o.CRDs); err != nil {
			return err
		}
	}
	m.mapper, err = o.discoveryMapper()
	var none *clikit.NoKubeconfigError
	switch {
	case errors.As(err, &none):
		// Nothing to ask: kinds are guessed, with notes.
	case err != nil:
		return fmt.Errorf("read the cluster's resources: %w", err)
	}
	role := ClusterRole(o.Name, rs, m.resourceFor)
	if m.mapper != nil {
		for _, r := range rs.Rules {
			if _, err := m.mapper.KindFor(r.Parent.GVR); meta.IsNoMatchError(err) {
				fmt.Fprintf(stderr, "note: rule %q: the cluster does not serve parent resource %s (yet); its permissions are included all the same\n", r.Name, clikit.GVRString(r.Parent.GVR))
			}
		}
	}
	for _, n := range escalationNotes(rs) {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	hint := "--crds DIR with its CRD"
	if m.mapper == nil && len(m.guessed) > 0 {
		hint += ", or --kubeconfig"
		fmt.Fprintf(stderr, "note: cannot read the cluster's resources (no kubeconfig and not in a cluster), so the resources of kinds are guessed from their names\n")
	}
	for _, g := range m.guessed {
		fmt.Fprintf(stderr, "note: guessed resource %q for kind %s%s; check it, or pass %s\n", g.resource, g.kind, g.why, hint)
	}
	objs := append([]any{role}, RefRoles(o.Name, rs, m.resourceFor, o.ServiceAccount)...)
	return printRoles(stdout, o.Output, objs)
}

// printRoles writes the roles as kubectl's printers write objects: JSON indented by four
// spaces (one object, or a v1 List of several), or YAML documents after a comment that
// says where they come from.
func printRoles(w io.Writer, format string, objs []any) error {
	if format == "json" {
		var v any = objs[0]
		if len(objs) > 1 {
			v = map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}
		}
		data, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(data, '\n'))
		return err
	}
	var b strings.Builder
	b.WriteString("# The permissions that the rules need, from \"kubecel rbac\". Regenerate it after editing the rules.\n")
	for i, obj := range objs {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// discoveryMapper returns a RESTMapper built from the discovery of the configured cluster.
func (o *Options) discoveryMapper() (meta.RESTMapper, error) {
	cfg, err := o.Cluster.RESTConfig()
	if err != nil {
		return nil, err
	}
	if err := clikit.Reach(cfg); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = clikit.ReachTimeout
	}
	client, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	groups, err := restmapper.GetAPIGroupResources(client)
	// A group whose discovery failed (an aggregated API that is down) maps nothing; its
	// kinds are guessed like those of any group the cluster does not serve.
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, clikit.ServerError(cfg.Host, err)
	}
	return restmapper.NewDiscoveryRESTMapper(groups), nil
}

// kindMapping maps child kinds to resources: from CRD manifests first, then from the
// Cluster's discovery, and otherwise by guessing the plural from the kind's name.
type kindMapping struct {
	crds    *rules.CRDSchemas // nil without --crds
	mapper  meta.RESTMapper   // nil without a usable cluster
	guessed []guess
}

// guess records a kind whose resource was guessed, and why when a cluster was asked.
type guess struct {
	kind, resource, why string
}

func (m *kindMapping) resourceFor(gvk schema.GroupVersionKind) schema.GroupVersionResource {
	if m.crds != nil {
		if gvr, ok := m.crds.ResourceFor(gvk); ok {
			return gvr
		}
	}
	var why string
	if m.mapper != nil {
		mapping, err := m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			return mapping.Resource
		}
		why = " (the cluster does not serve it)"
		if !meta.IsNoMatchError(err) {
			why = " (" + err.Error() + ")"
		}
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	g := guess{kind: gvkString(gvk), resource: gvr.Resource, why: why}
	for _, seen := range m.guessed {
		if seen.kind == g.kind {
			return gvr
		}
	}
	m.guessed = append(m.guessed, g)
	return gvr
}

// gvkString renders a kind as kubectl does: Kind.group/version, or Kind/v1 for the core group.
func gvkString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind + "/" + gvk.Version
	}
	return gvk.Kind + "." + gvk.Group + "/" + gvk.Version
}
