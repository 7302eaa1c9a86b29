// Package rbac is the logic of kubecel rbac: from the rules it works out the access the
// controller needs (to parents, children, and the kinds refs read, with the resources of
// kinds mapped by a CRD directory, the cluster's discovery or a guess), and prints the
// aggregated ClusterRole, with Roles and RoleBindings for refs confined to namespaces.
package rbac
