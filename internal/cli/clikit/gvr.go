package clikit

import "k8s.io/apimachinery/pkg/runtime/schema"

// GVRString renders a resource as group/version/resource, or version/resource for the core group.
func GVRString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Version + "/" + gvr.Resource
	}
	return gvr.Group + "/" + gvr.Version + "/" + gvr.Resource
}
