package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubecel/kubecel/internal/rollout"
	"github.com/kubecel/kubecel/internal/testenv"
)

// TestRolloutProcessRestartKeepsMembers restarts `kubecel run` (SIGKILL, then the same
// rules) while a rollout whose one step holds every parent waits out its pause: every
// parent is a member of the step taken and at v2, so the restarted process must not
// send any of them back to v1, even for a moment. A watch on the children sees every
// version they take after the kill.
//
// The process reconciles the parents it finds on start before its rollout's first tick
// says which are members: a parent it takes then must stay where its Synced condition
// says (it used to go back to v1 in about half the restarts). The test restarts several
// times, with many workers to take many parents at once.
func TestRolloutProcessRestartKeepsMembers(t *testing.T) {
	const restarts = 5
	w := newRolloutWorld(t, 20)
	r := w.run("first")
	all := []*replica{r}
	w.waitParents(map[string]string{"*": "v1"}, map[string]string{"*": ""})
	w.setRules(rolloutRulesText(w.ns, "v2", strings.Replace(rolloutPolicy("1h"), `["5%", "25%", "50%", "100%"]`, `["100%"]`, 1)))
	var before *rollout.Revision
	testenv.Eventually(t, 3*time.Minute, func() (bool, string) {
		before = w.current()
		return before.Number == 2 && before.Phase == rollout.Progressing && before.Step == 1 && !before.HealthySince.IsZero(),
			fmt.Sprintf("revision %d is %s at step %d, healthy since %v; want revision 2 Progressing at step 1, seen healthy",
				before.Number, before.Phase, before.Step, before.HealthySince)
	})
	w.waitParents(map[string]string{"*": "v2"}, map[string]string{"*": before.Hash})

	for i := range restarts {
		if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-r.done
		list, err := w.kube.CoreV1().ConfigMaps(w.ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		watch, err := w.kube.CoreV1().ConfigMaps(w.ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		var back []string
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			for e := range watch.ResultChan() {
				if cm, ok := e.Object.(*corev1.ConfigMap); ok && cm.Data["version"] != "v2" {
					back = append(back, fmt.Sprintf("%s %s at %q", e.Type, cm.Name, cm.Data["version"]))
				}
			}
		}()
		mark := len(auditEvents(t, w.cp))
		r = w.run(fmt.Sprintf("restart-%d", i), "--workers", "16")
		all = append(all, r)
		w.idle(r)
		w.looked(r, true)
		watch.Stop()
		<-drained
		if len(back) > 0 {
			t.Errorf("restart %d: members of the step taken went back from v2: %v", i, back)
		}
		if objs := objectWrites(w.kubecelWrites(mark)); len(objs) > 0 {
			t.Errorf("restart %d: the restarted process wrote %d times to parents, children or revisions, want none:\n%s", i, len(objs), strings.Join(objs, "\n"))
		}
		if after := w.current(); !after.HealthySince.Equal(before.HealthySince) || after.Step != 1 || after.Phase != rollout.Progressing {
			t.Errorf("restart %d: %s at step %d, healthy since %v; want Progressing at step 1, healthy since %v", i, after.Phase, after.Step, after.HealthySince, before.HealthySince)
		}
	}
	w.waitParents(map[string]string{"*": "v2"}, map[string]string{"*": before.Hash})
}
