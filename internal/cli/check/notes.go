package check

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/crdschema"
	"github.com/kubecel/kubecel/rules"
)

// noticeSeverity is the severity of what check says without it being a problem: the
// parents and children that were not type-checked.
const noticeSeverity = "notice"

// clusterSchemas reads the CRDs of the cluster and what it serves, for check.
func clusterSchemas(ctx context.Context, c *clikit.ClusterFlags) (rules.SchemaSource, rules.ServedSource, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	if err := clikit.Reach(cfg); err != nil {
		return nil, nil, err
	}
	cfg.UserAgent = "kubecel-check"
	schemas, err := crdschema.FromCluster(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("read the CRDs of %s: %w", cfg.Host, err)
	}
	served, err := crdschema.Served(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", cfg.Host, err)
	}
	return schemas, served, nil
}

// typeCheckNotices lists the parents and children whose expressions and values were not
// checked against a schema, and how to get one. from names what --crds or --kubeconfig
// gave ("" without either) in the notices.
func typeCheckNotices(rs *rules.RuleSet, from string) []*rules.Error {
	var out []*rules.Error
	for _, r := range rs.Rules {
		if !r.ParentTypeChecked() {
			msg := noSchema(clikit.GVRString(r.Parent.GVR), r.Parent.GVR.GroupVersion(), from, "a misspelt parent field fails only when evaluated")
			if plural := guessPlural(r.Parent.GVR.Resource); plural != r.Parent.GVR.Resource {
				msg += fmt.Sprintf("; parent.resource is the plural resource name: if %q is singular, write %q", r.Parent.GVR.Resource, plural)
			}
			out = append(out, &rules.Error{Rule: r.Name, Field: "parent", Message: msg})
		}
		for _, c := range r.Children {
			if c.TypeChecked() {
				continue
			}
			kind := c.GVK.GroupVersion().String() + " " + c.GVK.Kind
			out = append(out, &rules.Error{Rule: r.Name, Child: c.ID,
				Message: noSchema(kind, c.GVK.GroupVersion(), from, "a value of the wrong type fails only when applied")})
		}
		for _, ref := range r.Refs {
			if !r.RefTypeChecked(ref) {
				kind := ref.GVK.GroupVersion().String() + " " + ref.GVK.Kind
				out = append(out, &rules.Error{Rule: r.Name, Ref: ref.ID,
					Message: noSchema(kind, ref.GVK.GroupVersion(), from, "a misspelt field of it fails only when evaluated")})
			}
		}
	}
	return out
}

// noSchema says that what (a resource or kind of gv) has no schema, where check looked,
// what that means, and how to get one.
func noSchema(what string, gv schema.GroupVersion, from, means string) string {
	if builtinGroup(gv.Group) {
		return fmt.Sprintf("not type-checked: kubecel embeds no schema for %s (docs/rules.md lists the built-in kinds of Kubernetes %s it has), so %s",
			what, rules.BuiltinKubernetesVersion(), means)
	}
	where := ""
	if from != "" {
		where = " in " + from
	}
	return fmt.Sprintf("not type-checked: no schema for %s%s, so %s; give its CRD with --crds DIR, or --kubeconfig FILE to read a cluster's CRDs",
		what, where, means)
}

// builtinGroup reports whether a group is Kubernetes' own (core, apps, *.k8s.io), which
// no CRD defines.
func builtinGroup(group string) bool {
	return group == "" || !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}

// typeCheckSummary counts the notices for check's summary line: ", not type-checked: 1
// parent, 2 children, 1 ref", or "" when everything was type-checked.
func typeCheckSummary(notices []*rules.Error) string {
	parents, children, refs := 0, 0, 0
	for _, n := range notices {
		switch {
		case n.Ref != "":
			refs++
		case n.Child == "":
			parents++
		default:
			children++
		}
	}
	var parts []string
	if parents > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", parents, clikit.Plural(parents, "parent", "parents")))
	}
	if children > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", children, clikit.Plural(children, "child", "children")))
	}
	if refs > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", refs, clikit.Plural(refs, "ref", "refs")))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", not type-checked: " + strings.Join(parts, ", ")
}

// guessPlural is the plural a resource name would have if it were a singular (the
// guess kubectl makes from a kind); a plural name is its own guess.
func guessPlural(resource string) string {
	if strings.HasSuffix(resource, "s") {
		return resource
	}
	gvr, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: resource})
	return gvr.Resource
}
