package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Where the machine's CPU goes during convergence: the replicas, the control plane and
// the bench share the same cores, so the controller's CPU alone does not say whether
// the machine was saturated. The bench samples the whole machine (/proc/stat) and each
// process it knows of (/proc/PID/stat); what is busy but none of them is "other": the
// rest of the machine, such as other people's test suites.

// cpuUse is CPU seconds: the machine's busy and total time over all CPUs, and each
// known process's user+system time by name.
type cpuUse struct {
	busy, total float64
	procs       map[string]float64
}

// processNames are the groups the use is split into, in print order.
var processNames = []string{"kubecel", "kube-apiserver", "etcd", "kube-controller-manager", "bench"}

// controlPlanePIDs finds the control plane's processes: those whose command line names
// the control plane's directory (etcd's data dir, the API server's certificates, the
// kubeconfig of kube-controller-manager), by the base name of their executable. Call it
// before the replicas start: their command lines name the kubeconfig too.
func controlPlanePIDs(dir string) map[string][]int {
	out := map[string][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir) {
			continue
		}
		exe, _, _ := strings.Cut(string(cmdline), "\x00")
		name := filepath.Base(exe)
		out[name] = append(out[name], pid)
	}
	return out
}

// sampleCPU reads the machine's CPU time and that of the control plane, the replicas
// and the bench itself.
func (b *bench) sampleCPU() cpuUse {
	u := cpuUse{procs: map[string]float64{}}
	u.busy, u.total = machineCPU()
	for name, pids := range b.cpPIDs {
		for _, pid := range pids {
			u.procs[name] += processCPU(pid)
		}
	}
	for _, c := range b.ctrls {
		u.procs["kubecel"] += c.cpuSeconds()
	}
	u.procs["bench"] = processCPU(os.Getpid())
	return u
}

func (u cpuUse) minus(earlier cpuUse) cpuUse {
	out := cpuUse{busy: u.busy - earlier.busy, total: u.total - earlier.total, procs: map[string]float64{}}
	for k, v := range u.procs {
		out.procs[k] = v - earlier.procs[k]
	}
	return out
}

// other is the busy time of processes the bench does not know.
func (u cpuUse) other() float64 {
	o := u.busy
	for _, v := range u.procs {
		o -= v
	}
	return max(o, 0)
}

// String is "busy 93% of 2 CPUs (37.2 of 40.0 s): kubecel 9.1, kube-apiserver 17.0, ...".
func (u cpuUse) String() string {
	if u.total <= 0 {
		return "not measured"
	}
	parts := make([]string, 0, len(processNames)+1)
	for _, name := range processNames {
		parts = append(parts, fmt.Sprintf("%s %.1f", name, u.procs[name]))
	}
	parts = append(parts, fmt.Sprintf("other %.1f", u.other()))
	return fmt.Sprintf("busy %.0f%% (%.1f of %.1f CPU s): %s", 100*u.busy/u.total, u.busy, u.total, strings.Join(parts, ", "))
}

// cell is the use for a table cell: "93%: 9.1 / 17.0 / 3.2 / 8.0" (kubecel,
// kube-apiserver, etcd, the rest).
func (u cpuUse) cell() string {
	if u.total <= 0 {
		return "not measured"
	}
	rest := u.busy - u.procs["kubecel"] - u.procs["kube-apiserver"] - u.procs["etcd"]
	return fmt.Sprintf("%.0f%%: %.1f / %.1f / %.1f / %.1f", 100*u.busy/u.total, u.procs["kubecel"], u.procs["kube-apiserver"], u.procs["etcd"], max(rest, 0))
}

// machineCPU returns the busy and total CPU seconds of all CPUs since boot, from the
// first line of /proc/stat (user nice system idle iowait irq softirq steal ...).
func machineCPU() (busy, total float64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	for i, s := range f[1:9] {
		v, _ := strconv.ParseFloat(s, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy / clockTicks, total / clockTicks
}

// processCPU returns a process's user plus system CPU seconds; 0 once it is gone.
func processCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces:
	// utime and stime are fields 14 and 15 of the whole line.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / clockTicks
}

const clockTicks = 100 // USER_HZ on Linux
