package controlplane

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is a child process that this package started itself (envtest starts etcd and
// kube-apiserver; this covers kube-controller-manager, kube-scheduler, kwok and the
// watchdog).
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// startProcess starts cmd with its output sent to logPath (or discarded when empty).
// Unless cmd already has SysProcAttr, the process is killed when this one dies.
func startProcess(cmd *exec.Cmd, logPath string) (*process, error) {
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return nil, err
		}
		defer f.Close() // the child keeps its own descriptor
		cmd.Stdout, cmd.Stderr = f, f
	}
	if cmd.SysProcAttr == nil {
		// Die with us, where the system can (a second line of defence besides the
		// watchdog).
		cmd.SysProcAttr = dieWithParent()
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, with its exit error.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop asks the process to terminate and kills it after grace.
func (p *process) stop(grace time.Duration) error {
	if ok, _ := p.exited(); ok {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return p.kill()
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		return p.kill()
	}
}

func (p *process) kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.done
	return nil
}
