package controlplane

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// watchdogScript waits for the process $OWNER to end, then kills every process whose
// command line mentions $MARKER (the control plane's state directory, which appears in
// the flags of etcd, kube-apiserver and kube-controller-manager) and, when $REMOVE is
// set, deletes that directory. The values come through the environment, so the
// watchdog's own command line never matches.
const watchdogScript = `
while kill -0 "$OWNER" 2>/dev/null; do sleep 1; done
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [ "$pid" = "$$" ] && continue
  cmdline=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null) || continue
  case "$cmdline" in *"$MARKER"*) kill -9 "$pid" 2>/dev/null ;; esac
done
if [ -n "$REMOVE" ]; then rm -rf "$MARKER"; fi
`

// startWatchdog starts a shell that outlives this process only long enough to clean up
// after it: envtest starts etcd and kube-apiserver in their own process group, so a
// test binary that panics, times out or is killed would otherwise leave them running.
func startWatchdog(dir string, remove bool) (*process, error) {
	cmd := exec.Command("/bin/sh", "-c", watchdogScript)
	cmd.Env = append(os.Environ(), "OWNER="+strconv.Itoa(os.Getpid()), "MARKER="+dir)
	if remove {
		cmd.Env = append(cmd.Env, "REMOVE=1")
	}
	// Its own process group and no death signal: it must outlive us, and a Ctrl-C
	// sent to our process group must not stop it before it has cleaned up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return startProcess(cmd, "")
}
