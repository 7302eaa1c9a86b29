// Package run is the logic of kubecel run: it checks the flags, loads or creates the
// installation's identity, serves /metrics, /healthz, /readyz and pprof, and runs the
// controller on the rules of files and ConfigMaps (reloaded as they change) while this
// process holds the installation's leader election Lease, or, with sharding, for the
// parents of its share of the ring. A process refuses to start beside live processes
// of the installation that run in the other mode. The memory loop that keeps the
// controller's resident size near its live data is the subpackage memory.
package run
