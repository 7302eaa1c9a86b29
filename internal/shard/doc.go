// Package shard spreads the parents of kubecel's rules over several replicas that run
// at once (kubecel run --sharding), on the API server's own primitives: each replica
// holds a membership Lease labelled with the ring's name, and the live Leases are the
// ring.
//
// Parents fall into contract.Buckets buckets (contract.Bucket, from namespace and name), and
// Ring.Assign gives each bucket to one live member. A replica reconciles a parent only
// while it serves the parent's bucket: Member.Begin says whether it does and counts the
// reconcile until its end function is called.
//
// Guarantees:
//   - No bucket is served by two replicas at once. When the ring changes, a replica
//     first stops serving the buckets it loses (waiting for their running reconciles to
//     end), and only then acknowledges the new ring's version in its Lease. It starts
//     on buckets it gains only once every live member's Lease acknowledges that version.
//     Between two such expansions, what a replica serves only shrinks.
//   - A replica writes only while it renewed its Lease less than the renew deadline ago
//     (its writes are fenced, see leader.FenceWrites); one that cannot renew in time
//     stops and Run returns an error, so the process exits and a restart joins again.
//     The others drop a member whose Lease went unrenewed for the lease duration, which
//     is longer.
//   - A member that leaves (Leave, after its controller stopped) deletes its Lease, so
//     the others take its buckets over without waiting for the lease duration.
//   - Leases of the ring that nobody renewed for twice the lease duration are deleted,
//     with preconditions on UID and resourceVersion.
package shard
