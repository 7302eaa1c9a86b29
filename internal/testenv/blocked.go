package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// WaitBlocked waits until a goroutine whose stack holds the function fn (as the stack
// trace names it, "shard.(*leaseClient).renew") is blocked on a mutex, so that a test
// can change something while that goroutine waits for its turn, knowing it waits:
// a sleep would only hope so, and a test that changed things too early would pass
// without testing anything.
func WaitBlocked(t testing.TB, fn string) {
	t.Helper()
	Eventually(t, 30*time.Second, func() (bool, string) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(g, fn) && (strings.Contains(header, "[sync.Mutex.Lock") || strings.Contains(header, "[sync.RWMutex.Lock") || strings.Contains(header, "[semacquire")) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no goroutine in %s is blocked on a lock", fn)
	})
}
