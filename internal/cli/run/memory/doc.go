// Package memory is the memory loop of kubecel run: it keeps the process's resident
// size near its live data (mostly the informer caches) by setting GOGC from the live
// heap, and returns the memory of a burst of work to the operating system once the
// controller is idle after it.
package memory
