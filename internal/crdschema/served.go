package crdschema

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/rules"
)

// Served reads what the cluster serves (its discovery), so that `kubecel check` can
// refuse a rule whose parent, children or refs the cluster does not serve, and say what
// was probably meant.
func Served(cfg *rest.Config) (rules.ServedSource, error) {
	client, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, lists, err := client.ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("read the resources the cluster serves: %w", err)
	}
	// A group whose discovery failed (an aggregated API that is down) is left out; its
	// kinds then read as not served, which is what the controller would find too.
	s := &served{byGV: map[schema.GroupVersion][]metav1.APIResource{}}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				s.byGV[gv] = append(s.byGV[gv], r)
			}
		}
	}
	return s, nil
}

// served is the cluster's resources by group and version.
type served struct {
	byGV map[schema.GroupVersion][]metav1.APIResource
}

// ResourceServed implements rules.ServedSource.
func (s *served) ResourceServed(gvr schema.GroupVersionResource) string {
	for _, r := range s.byGV[gvr.GroupVersion()] {
		if r.Name == gvr.Resource {
			return ""
		}
	}
	what := fmt.Sprintf("the cluster does not serve %s in %s", gvr.Resource, gvString(gvr.GroupVersion()))
	for _, r := range s.byGV[gvr.GroupVersion()] {
		if strings.EqualFold(r.SingularName, gvr.Resource) || strings.EqualFold(r.Kind, gvr.Resource) {
			return fmt.Sprintf("%s: %q is the singular name; the resource is %q", what, gvr.Resource, r.Name)
		}
	}
	if versions := s.versions(gvr.Group, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }); len(versions) > 0 {
		return fmt.Sprintf("%s: it is served in %s", what, strings.Join(versions, ", "))
	}
	return what + s.install(gvr.Group)
}

// KindServed implements rules.ServedSource.
func (s *served) KindServed(gvk schema.GroupVersionKind) string {
	for _, r := range s.byGV[gvk.GroupVersion()] {
		if r.Kind == gvk.Kind {
			return ""
		}
	}
	what := fmt.Sprintf(`no matches for kind %q in version %q: the cluster does not serve it`, gvk.Kind, gvk.GroupVersion().String())
	var elsewhere []string
	for gv, list := range s.byGV {
		for _, r := range list {
			if r.Kind == gvk.Kind {
				elsewhere = append(elsewhere, "apiVersion: "+gv.String())
			}
		}
	}
	if len(elsewhere) > 0 {
		slices.Sort(elsewhere)
		return fmt.Sprintf("%s; %s is served as %s", what, gvk.Kind, strings.Join(slices.Compact(elsewhere), ", "))
	}
	return what + s.install(gvk.Group)
}

// versions lists the versions of group (as group/version) that hold a resource that
// matches.
func (s *served) versions(group string, match func(metav1.APIResource) bool) []string {
	var out []string
	for gv, list := range s.byGV {
		if gv.Group == group && slices.ContainsFunc(list, match) {
			out = append(out, gvString(gv))
		}
	}
	slices.Sort(out)
	return out
}

// install says what to do about a group the cluster does not serve the wanted kind in.
func (s *served) install(group string) string {
	var versions []string
	for gv := range s.byGV {
		if gv.Group == group {
			versions = append(versions, gvString(gv))
		}
	}
	if len(versions) > 0 {
		slices.Sort(versions)
		return fmt.Sprintf(" (the group serves %s); check the spelling and the version", strings.Join(versions, ", "))
	}
	if group == "" || !strings.Contains(group, ".") {
		return ""
	}
	return fmt.Sprintf("; no group %s is served: install the CRD that defines it (kubectl apply -f CRD.yaml), then check again", group)
}

func gvString(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return gv.Version
	}
	return gv.String()
}
