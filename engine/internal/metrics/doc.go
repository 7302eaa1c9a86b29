// Package metrics defines the controller's Prometheus metrics: the kubecel_* counters,
// gauges and histogram of reconciles, applies, prunes, CEL errors and rules, the fair
// queue's flows, the parents not Ready, and the workqueue_* metrics of its queue,
// registered on the registry the caller gives (so a process serves them with its other
// metrics, and tests read them per controller).
//
// State: the collectors alone. Gauges that describe the controller's state (flows,
// parents not Ready) are read at scrape time through the snapshot functions the
// controller registers, so they never drift from it.
//
// Invariants: metric names and labels are stable (dashboards and alert rules in
// deploy/monitoring read them); label values are rule names, reasons and the top flows,
// never object contents.
package metrics
