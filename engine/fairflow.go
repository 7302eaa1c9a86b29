package engine

import (
	"hash/fnv"
	"strconv"
)

// Which flow a parent's key waits in: the owner of the work, so that a tenant who
// spreads its parents over many namespaces, or over many cluster-scoped parents, gets
// no more flows, and so no more of the workers, than one who keeps them together.

// clusterFlows is how many flows the cluster-scoped parents of one rule share.
const clusterFlows = 4

// flowOwner is what is known, beyond the key, of who owns a parent's work.
type flowOwner struct {
	// Tenant is the value of the fairness key label (Options.FairnessKey) on the parent's
	// namespace; "" when no key is set, or the namespace does not carry it.
	Tenant string
	// Origin is the origin of the parent's rule (rules.Rule.Origin): the ConfigMap that
	// a team's rule was read from; "" for rules from files and the named ConfigMap.
	Origin string
}

// flowName is the flow a key waits in, given its owner and the fairness key label:
//
//   - a cluster-scoped parent: one of clusterFlows flows of its rule, chosen by a hash
//     of its name ("/RULE/N"): a rule's thousand cluster-scoped parents are four flows,
//     not a thousand;
//   - a namespaced parent whose namespace carries the fairness key label: the tenant the
//     label names ("KEY=VALUE"), whichever namespace the parent is in;
//   - else, a parent of a rule read from a team's ConfigMap: that origin
//     ("configmap NS/NAME");
//   - else its namespace.
//
// Namespace names hold neither '/', '=' nor spaces, so the four kinds of names never
// meet.
func flowName(key queueKey, fairnessKey string, o flowOwner) string {
	switch {
	case key.Namespace == "":
		return "/" + key.Rule + "/" + strconv.Itoa(clusterFlow(key.Name))
	case fairnessKey != "" && o.Tenant != "":
		return fairnessKey + "=" + o.Tenant
	case o.Origin != "":
		return o.Origin
	}
	return key.Namespace
}

// clusterFlow is which of its rule's clusterFlows flows a cluster-scoped parent of this
// name waits in.
func clusterFlow(name string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % clusterFlows)
}
