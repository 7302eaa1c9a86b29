package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// readWatch notes when a file is read, from the kernel's inotify IN_ACCESS events on its
// directory. The controller re-reads its rules file every 2 s; the --crds phase times a
// reload from the controller's first read of the file after the bench rewrote it, so
// that the time covers reading, compiling and applying the rules, and not the wait for
// the next read.
type readWatch struct {
	f     *os.File
	name  string
	done  chan struct{}
	mu    sync.Mutex
	reads []time.Time
	// events counts the reads of every file of the directory.
	events int
}

// watchReads starts noting the reads of the file at path.
func watchReads(path string) (*readWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_ACCESS); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify watch %s: %w", filepath.Dir(path), err)
	}
	// A non-blocking descriptor in an *os.File is served by the runtime's poller, so
	// that Close ends a Read in progress.
	w := &readWatch{f: os.NewFile(uintptr(fd), "inotify"), name: filepath.Base(path), done: make(chan struct{})}
	go w.run()
	return w, nil
}

func (w *readWatch) run() {
	defer close(w.done)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return
		}
		now := time.Now()
		names := inotifyNames(buf[:n])
		w.mu.Lock()
		w.events += len(names)
		if slices.Contains(names, w.name) {
			w.reads = append(w.reads, now)
		}
		w.mu.Unlock()
	}
}

// inotifyNames reads the file names of a buffer of inotify events (struct
// inotify_event: wd, mask, cookie, len, then len bytes of name padded with NULs).
func inotifyNames(buf []byte) []string {
	var names []string
	for len(buf) >= unix.SizeofInotifyEvent {
		n := int(binary.NativeEndian.Uint32(buf[12:16]))
		end := min(unix.SizeofInotifyEvent+n, len(buf))
		names = append(names, strings.TrimRight(string(buf[unix.SizeofInotifyEvent:end]), "\x00"))
		buf = buf[end:]
	}
	return names
}

// firstAfter is the first read noted after t.
func (w *readWatch) firstAfter(t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.reads {
		if r.After(t) {
			return r, true
		}
	}
	return time.Time{}, false
}

func (w *readWatch) close() {
	w.f.Close()
	<-w.done
}

// writeAtomically replaces the file at path with data (a temporary file renamed over
// it), so that a reader never sees it half written.
func writeAtomically(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
