package rules

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file knows which kinds are namespaced, so that Load can refuse a namespaced
// parent's cluster-scoped child that does not say crossNamespace: true. What it does not
// know it leaves to the controller, which refuses such a child when it applies it.

// builtinKind is a kind Kubernetes serves itself.
type builtinKind struct {
	group, kind, resource string
	namespaced            bool
}

// builtinKinds lists the kinds of a Kubernetes API server, the cluster-scoped ones all,
// the namespaced ones that a rule may well name.
var builtinKinds = []builtinKind{
	// Cluster-scoped.
	{"", "Namespace", "namespaces", false},
	{"", "Node", "nodes", false},
	{"", "PersistentVolume", "persistentvolumes", false},
	{"", "ComponentStatus", "componentstatuses", false},
	{"rbac.authorization.k8s.io", "ClusterRole", "clusterroles", false},
	{"rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", false},
	{"apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions", false},
	{"apiregistration.k8s.io", "APIService", "apiservices", false},
	{"storage.k8s.io", "StorageClass", "storageclasses", false},
	{"storage.k8s.io", "CSIDriver", "csidrivers", false},
	{"storage.k8s.io", "CSINode", "csinodes", false},
	{"storage.k8s.io", "VolumeAttachment", "volumeattachments", false},
	{"storage.k8s.io", "VolumeAttributesClass", "volumeattributesclasses", false},
	{"scheduling.k8s.io", "PriorityClass", "priorityclasses", false},
	{"node.k8s.io", "RuntimeClass", "runtimeclasses", false},
	{"networking.k8s.io", "IngressClass", "ingressclasses", false},
	{"networking.k8s.io", "IPAddress", "ipaddresses", false},
	{"networking.k8s.io", "ServiceCIDR", "servicecidrs", false},
	{"admissionregistration.k8s.io", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", false},
	{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", false},
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", false},
	{"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings", false},
	{"admissionregistration.k8s.io", "MutatingAdmissionPolicy", "mutatingadmissionpolicies", false},
	{"admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding", "mutatingadmissionpolicybindings", false},
	{"certificates.k8s.io", "CertificateSigningRequest", "certificatesigningrequests", false},
	{"certificates.k8s.io", "ClusterTrustBundle", "clustertrustbundles", false},
	{"flowcontrol.apiserver.k8s.io", "FlowSchema", "flowschemas", false},
	{"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", "prioritylevelconfigurations", false},
	{"resource.k8s.io", "DeviceClass", "deviceclasses", false},
	{"resource.k8s.io", "ResourceSlice", "resourceslices", false},
	{"storagemigration.k8s.io", "StorageVersionMigration", "storageversionmigrations", false},
	{"internal.apiserver.k8s.io", "StorageVersion", "storageversions", false},
	// Namespaced.
	{"", "Pod", "pods", true},
	{"", "Service", "services", true},
	{"", "ConfigMap", "configmaps", true},
	{"", "Secret", "secrets", true},
	{"", "ServiceAccount", "serviceaccounts", true},
	{"", "Endpoints", "endpoints", true},
	{"", "Event", "events", true},
	{"", "LimitRange", "limitranges", true},
	{"", "PersistentVolumeClaim", "persistentvolumeclaims", true},
	{"", "PodTemplate", "podtemplates", true},
	{"", "ReplicationController", "replicationcontrollers", true},
	{"", "ResourceQuota", "resourcequotas", true},
	{"apps", "Deployment", "deployments", true},
	{"apps", "StatefulSet", "statefulsets", true},
	{"apps", "DaemonSet", "daemonsets", true},
	{"apps", "ReplicaSet", "replicasets", true},
	{"apps", "ControllerRevision", "controllerrevisions", true},
	{"batch", "Job", "jobs", true},
	{"batch", "CronJob", "cronjobs", true},
	{"autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true},
	{"policy", "PodDisruptionBudget", "poddisruptionbudgets", true},
	{"networking.k8s.io", "Ingress", "ingresses", true},
	{"networking.k8s.io", "NetworkPolicy", "networkpolicies", true},
	{"discovery.k8s.io", "EndpointSlice", "endpointslices", true},
	{"rbac.authorization.k8s.io", "Role", "roles", true},
	{"rbac.authorization.k8s.io", "RoleBinding", "rolebindings", true},
	{"coordination.k8s.io", "Lease", "leases", true},
	{"events.k8s.io", "Event", "events", true},
	{"storage.k8s.io", "CSIStorageCapacity", "csistoragecapacities", true},
	{"resource.k8s.io", "ResourceClaim", "resourceclaims", true},
	{"resource.k8s.io", "ResourceClaimTemplate", "resourceclaimtemplates", true},
}

// builtinScopes indexes builtinKinds by kind and by resource.
type builtinScopes struct {
	kinds     map[schema.GroupKind]bool
	resources map[schema.GroupResource]bool
}

var builtins = func() builtinScopes {
	s := builtinScopes{kinds: map[schema.GroupKind]bool{}, resources: map[schema.GroupResource]bool{}}
	for _, k := range builtinKinds {
		s.kinds[schema.GroupKind{Group: k.group, Kind: k.kind}] = k.namespaced
		s.resources[schema.GroupResource{Group: k.group, Resource: k.resource}] = k.namespaced
	}
	return s
}()

// Namespaced implements ScopeSource for the built-in kinds.
func (s builtinScopes) Namespaced(gk schema.GroupKind) (namespaced, known bool) {
	namespaced, known = s.kinds[gk]
	return namespaced, known
}

// ResourceNamespaced implements ScopeSource for the built-in resources.
func (s builtinScopes) ResourceNamespaced(gr schema.GroupResource) (namespaced, known bool) {
	namespaced, known = s.resources[gr]
	return namespaced, known
}

// scopes asks the built-in table first, then the Options' schemas when they know scopes.
type scopes struct {
	more ScopeSource
}

func newScopes(opts Options) scopes {
	more, _ := opts.Schemas.(ScopeSource)
	return scopes{more: more}
}

func (s scopes) kind(gk schema.GroupKind) (namespaced, known bool) {
	if namespaced, known = builtins.Namespaced(gk); !known && s.more != nil {
		namespaced, known = s.more.Namespaced(gk)
	}
	return namespaced, known
}

func (s scopes) resource(gr schema.GroupResource) (namespaced, known bool) {
	if namespaced, known = builtins.ResourceNamespaced(gr); !known && s.more != nil {
		namespaced, known = s.more.ResourceNamespaced(gr)
	}
	return namespaced, known
}

// checkChildScope reports a cluster-scoped child of a namespaced parent that does not
// say crossNamespace: true; whoever may write a parent in one namespace could otherwise
// have the controller create objects for the whole cluster. parentNamespaced is false
// when the parent is cluster-scoped or its scope is unknown.
func checkChildScope(r *ruleSource, cs *childSource, ch *Child, parent schema.GroupResource, parentNamespaced bool, s scopes, errs *ErrorList) {
	if !parentNamespaced || ch.CrossNamespace || ch.GVK.Empty() {
		return
	}
	if namespaced, known := s.kind(ch.GVK.GroupKind()); !known || namespaced {
		return
	}
	// The line of the kind, without a field in the message: the fix is on the child.
	at := cs.At.Key("expr")
	if cs.Template != nil {
		at = cs.At.Key("template").Key("kind")
	}
	fail(errs, where{Rule: r.Name, Child: cs.ID, Path: at}, fmt.Sprintf(
		"%s is cluster-scoped and the parent %s is namespaced: add crossNamespace: true to the child if whoever writes a parent may create it",
		ch.GVK.Kind, parent))
}

// clusterScoped reports whether a resource is known to be cluster-scoped.
func (s scopes) clusterScoped(gr schema.GroupResource) bool {
	namespaced, known := s.resource(gr)
	return known && !namespaced
}

// KindNamespaced reports the scope of a kind: from the built-in table of Kubernetes'
// own kinds, then from src when it knows scopes (CRDSchemas does). known is false when
// neither does.
func KindNamespaced(gk schema.GroupKind, src SchemaSource) (namespaced, known bool) {
	return newScopes(Options{Schemas: src}).kind(gk)
}

// ResourceNamespaced is KindNamespaced for a resource.
func ResourceNamespaced(gr schema.GroupResource, src SchemaSource) (namespaced, known bool) {
	return newScopes(Options{Schemas: src}).resource(gr)
}
