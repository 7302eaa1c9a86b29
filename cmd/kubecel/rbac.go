package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/rulesfrom"
	"github.com/kubecel/kubecel/rules"
)

type rbacOptions struct {
	rulesFiles []string
	cluster    *clikit.ClusterFlags
	name       string
	sa         string
	crdDir     string
	output     clikit.OutputFlag
}

func newRBACCommand() *cobra.Command {
	o := rbacOptions{name: "kubecel-rules", sa: "kubecel-system/kubecel", cluster: clikit.NewClusterFlags()}
	cmd := &cobra.Command{
		Use:   "rbac --rules FILE|DIR... [-o yaml|json]",
		Short: "Print the least-privilege ClusterRole that the rules need",
		Long: `rbac prints, as YAML (or JSON with -o json), the ClusterRole that the rules need and nothing more:
get, list, watch and patch on each parent resource (patch adds and removes the
cleanup.kubecel.dev/<rule> finalizer), patch on its status subresource when the rule writes
status, and get, list, watch, create, patch and delete on each child resource (every
write is a server-side apply; delete prunes).

The role is labelled kubecel.dev/aggregate-to-controller: "true", so the controller's
aggregated ClusterRole from deploy/ picks it up; the controller's own needs (its rules
ConfigMap, Events, Leases, reading CRDs) are in the fixed base role there.

Child kinds are mapped to resources with the CRDs from --crds, then with the discovery
of the cluster from --kubeconfig ($KUBECONFIG, ~/.kube/config or in-cluster), and are
otherwise guessed from the kind's name, with a note on stderr. Kinds are guessed only
when there is no kubeconfig at all: a cluster that is configured but cannot be read
(unreachable, refused credentials) is an error, wherever its kubeconfig comes from.

--rules may be given several times and may name a directory (its *.yaml files), all
loading as one rule set; --rules - reads the rules from the standard input.

Refs are read with list and watch. Where a rule confines a ref to named namespaces (a
literal namespace, or the rule's parent.namespaces), those reads are not in the
ClusterRole: each such namespace gets a Role of that name with them and a RoleBinding
of it to the controller's ServiceAccount (--serviceaccount), printed after the
ClusterRole (-o json prints a List then).`,
		Example: `  kubecel rbac --rules rules.yaml > rules-rbac.yaml
  kubectl apply -f rules-rbac.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	rulesfrom.AddRulesFlag(cmd.Flags(), &o.rulesFiles)
	o.cluster.AddFlags(cmd.Flags(), "kubeconfig of the cluster whose discovery maps kinds to resources (default $KUBECONFIG, ~/.kube/config or in-cluster; without one, resource names are guessed)")
	cmd.Flags().StringVar(&o.name, "name", o.name, "name of the ClusterRole (and of the Roles for refs confined to namespaces)")
	cmd.Flags().StringVar(&o.sa, "serviceaccount", o.sa, "NAMESPACE/NAME of the controller's ServiceAccount, which the RoleBindings for refs confined to namespaces bind")
	cmd.Flags().StringVar(&o.crdDir, "crds", "", "directory of CustomResourceDefinition manifests that map the kinds they define to their resources")
	o.output.AddFlag(cmd.Flags(), "yaml", "json")
	_ = cmd.MarkFlagRequired("rules")
	return cmd
}

func (o *rbacOptions) run(stdin io.Reader, stdout, stderr io.Writer) error {
	if ns, name, ok := strings.Cut(o.sa, "/"); !ok || ns == "" || name == "" {
		return fmt.Errorf("--serviceaccount %q: want NAMESPACE/NAME", o.sa)
	}
	docs, err := rulesfrom.Read(stdin, o.rulesFiles)
	if err != nil {
		return err
	}
	rs, err := rules.LoadDocuments(docs, rules.Options{})
	if err != nil {
		return fmt.Errorf("load rules:\n%w", err)
	}
	m := &kindMapping{}
	if o.crdDir != "" {
		if m.crds, err = clikit.ReadCRDs(o.crdDir); err != nil {
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
	role := rulesClusterRole(o.name, rs, m.resourceFor)
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
	objs := append([]any{role}, refRoles(o.name, rs, m.resourceFor, o.sa)...)
	return printRoles(stdout, o.output.Value, objs)
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
func (o *rbacOptions) discoveryMapper() (meta.RESTMapper, error) {
	cfg, err := o.cluster.RESTConfig()
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
// cluster's discovery, and otherwise by guessing the plural from the kind's name.
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
