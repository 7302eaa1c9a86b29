package rulesource

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/testenv"
	"github.com/kubecel/kubecel/rules"
)

// eventually polls with a generous deadline: the API server is shared with other tests.
func eventually(t *testing.T, cond func() (bool, string)) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, cond)
}

// watchRules starts a Loader on sources and its Watch, and returns what it applies.
func watchRules(t *testing.T, kube kubernetes.Interface, reg *prometheus.Registry, sources ...Source) (*Loader, *applied) {
	t.Helper()
	ctx := testContext(t)
	var got applied
	l, err := New(Options{Sources: sources, Apply: got.apply, Registry: reg, Events: kube})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { l.Watch(ctx); close(done) }()
	t.Cleanup(func() { <-done })
	return l, &got
}

// waitRules waits until the running rules are want.
func waitRules(t *testing.T, got *applied, want ...string) {
	t.Helper()
	eventually(t, func() (bool, string) {
		diff := cmp.Diff(want, got.names())
		return diff == "", "running rules (-want +got):\n" + diff
	})
}

// waitEvent waits for a Warning Event with reason on the ConfigMap name and returns its
// message.
func waitEvent(t *testing.T, kube kubernetes.Interface, ns, name, reason string) string {
	t.Helper()
	var msg string
	eventually(t, func() (bool, string) {
		list, err := kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=ConfigMap,involvedObject.name=" + name + ",reason=" + reason})
		if err != nil || len(list.Items) == 0 {
			return false, fmt.Sprintf("no %s Event on configmap %s (err %v)", reason, name, err)
		}
		e := list.Items[0]
		msg = e.Message
		return e.Type == corev1.EventTypeWarning, "event type " + e.Type
	})
	return msg
}

func putConfigMap(t *testing.T, kube kubernetes.Interface, ns, name string, lbls map[string]string, data map[string]string) {
	t.Helper()
	cms := kube.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Data: data}
		if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	cm.Data = data
	if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestConfigMapReloadsAndKeepsLastGood(t *testing.T) {
	ns := testenv.Namespace(t)
	kube := testenv.Kube(t)
	putConfigMap(t, kube, ns, "kubecel-rules", nil, map[string]string{
		"b.yaml": ruleDoc("b"), "a.yaml": ruleDoc("a1") + "---\n" + ruleDoc("a2"), "README": "not rules"})
	// Another ConfigMap in the namespace is never read.
	putConfigMap(t, kube, ns, "other", nil, map[string]string{"rules.yaml": ruleDoc("other")})
	reg := prometheus.NewRegistry()
	l, got := watchRules(t, kube, reg, ConfigMap(kube, ns, "kubecel-rules"))
	src := "configmap " + ns + "/kubecel-rules key "
	if diff := cmp.Diff([]string{"a1@" + src + "a.yaml", "a2@" + src + "a.yaml", "b@" + src + "b.yaml"}, got.names()); diff != "" {
		t.Errorf("two keys, sorted (-want +got):\n%s", diff)
	}

	// An edit reloads.
	putConfigMap(t, kube, ns, "kubecel-rules", nil, map[string]string{"b.yaml": ruleDoc("b", "b2"), "a.yaml": ruleDoc("a1")})
	waitRules(t, got, "a1@"+src+"a.yaml", "b@"+src+"b.yaml", "b2@"+src+"b.yaml")

	// A broken key keeps the ConfigMap's last good version, with a Warning Event that
	// names the place.
	putConfigMap(t, kube, ns, "kubecel-rules", nil, map[string]string{"b.yaml": ruleDoc("b", "b3!"), "a.yaml": ruleDoc("a1")})
	msg := waitEvent(t, kube, ns, "kubecel-rules", ReasonRulesLoadFailed)
	if want := src + `b.yaml:19: rule "b3" child "cm": template.metadata.name: ${parent.metadata.name +}`; !strings.Contains(msg, want) {
		t.Errorf("event message %q, want it to contain %q", msg, want)
	}
	if n := testenv.Counter(t, reg, "kubecel_rules_reload_total", "result", "error"); n != 1 {
		t.Errorf("reload errors %v, want 1", n)
	}
	if diff := cmp.Diff([]string{"a1@" + src + "a.yaml", "b@" + src + "b.yaml", "b2@" + src + "b.yaml"}, got.names()); diff != "" {
		t.Errorf("after a broken edit (-want +got):\n%s", diff)
	}

	// Warn lands on the ConfigMap that holds the rule.
	l.Warn("b2", "RuleTestReason", "rule b2 cannot run")
	waitEvent(t, kube, ns, "kubecel-rules", "RuleTestReason")

	// Fixed, it reloads.
	putConfigMap(t, kube, ns, "kubecel-rules", nil, map[string]string{"b.yaml": ruleDoc("b3"), "a.yaml": ruleDoc("a1")})
	waitRules(t, got, "a1@"+src+"a.yaml", "b3@"+src+"b.yaml")
}

func TestConfigMapSelectorGathersConfigMaps(t *testing.T) {
	ns := testenv.Namespace(t)
	kube := testenv.Kube(t)
	team := map[string]string{"kubecel.dev/rules": "true"}
	putConfigMap(t, kube, ns, "team-b", team, map[string]string{"rules.yaml": ruleDoc("b")})
	putConfigMap(t, kube, ns, "team-a", team, map[string]string{"rules.yaml": ruleDoc("a")})
	putConfigMap(t, kube, ns, "unlabelled", nil, map[string]string{"rules.yaml": ruleDoc("x")})
	sel := labels.SelectorFromSet(team)
	_, got := watchRules(t, kube, prometheus.NewRegistry(), ConfigMapSelector(kube, ns, sel))
	key := func(cm string) string { return "configmap " + ns + "/" + cm + " key rules.yaml" }
	waitRules(t, got, "a@"+key("team-a"), "b@"+key("team-b"))

	// Team b breaks its ConfigMap: team a still reloads.
	putConfigMap(t, kube, ns, "team-b", team, map[string]string{"rules.yaml": ruleDoc("b", "b2!")})
	waitEvent(t, kube, ns, "team-b", ReasonRulesLoadFailed)
	putConfigMap(t, kube, ns, "team-a", team, map[string]string{"rules.yaml": ruleDoc("a", "a2")})
	waitRules(t, got, "a@"+key("team-a"), "a2@"+key("team-a"), "b@"+key("team-b"))

	// Team a takes team b's rule name: the error lands on team a, which changed.
	putConfigMap(t, kube, ns, "team-a", team, map[string]string{"rules.yaml": ruleDoc("a", "b")})
	msg := waitEvent(t, kube, ns, "team-a", ReasonRulesLoadFailed)
	if want := key("team-a") + `:12: rule "b": name: duplicate rule name (also at ` + key("team-b") + ":4)"; !strings.Contains(msg, want) {
		t.Errorf("event message %q, want it to contain %q", msg, want)
	}

	// A third team joins; a deleted ConfigMap takes its rules away, so team a's version
	// now loads.
	putConfigMap(t, kube, ns, "team-c", team, map[string]string{"rules.yaml": ruleDoc("c")})
	if err := kube.CoreV1().ConfigMaps(ns).Delete(t.Context(), "team-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules(t, got, "a@"+key("team-a"), "b@"+key("team-a"), "c@"+key("team-c"))
}

// TestConfigMapNeedsOnlyItsName runs the named ConfigMap source as a user that may only
// list and watch that one ConfigMap (and record Events), as deploy/base/rbac.yaml grants.
func TestConfigMapNeedsOnlyItsName(t *testing.T) {
	ns := testenv.Namespace(t)
	admin := testenv.Kube(t)
	putConfigMap(t, admin, ns, "kubecel-rules", nil, map[string]string{"rules.yaml": ruleDoc("a")})
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "rules"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"kubecel-rules"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}}
	if _, err := admin.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "rules"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rules"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "rules-reader"}}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitAllowed(t, "rules-reader", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "watch", Resource: "configmaps", Name: "kubecel-rules"})
	// A user without the Role cannot start: the error says what to check.
	stranger := testenv.Config(t)
	stranger.Impersonate = rest.ImpersonationConfig{UserName: "stranger"}
	strangerKube := kubernetes.NewForConfigOrDie(stranger)
	saved := syncTimeout
	syncTimeout = 3 * time.Second
	l, err := New(Options{Sources: []Source{ConfigMap(strangerKube, ns, "kubecel-rules")}, Apply: new(applied).apply})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Start(testContext(t))
	syncTimeout = saved
	if want := "watch configmap " + ns + "/kubecel-rules: not listed within 3s: check that the controller may list and watch it"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("start without permission: %v, want %q", err, want)
	}

	cfg := testenv.Config(t)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "rules-reader"}
	reader := kubernetes.NewForConfigOrDie(cfg)
	if _, err := reader.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Fatal("the user may list every ConfigMap: the test proves nothing")
	}
	_, got := watchRules(t, reader, prometheus.NewRegistry(), ConfigMap(reader, ns, "kubecel-rules"))
	src := "configmap " + ns + "/kubecel-rules key rules.yaml"
	putConfigMap(t, admin, ns, "kubecel-rules", nil, map[string]string{"rules.yaml": ruleDoc("a", "b!")})
	waitEvent(t, admin, ns, "kubecel-rules", ReasonRulesLoadFailed)
	putConfigMap(t, admin, ns, "kubecel-rules", nil, map[string]string{"rules.yaml": ruleDoc("a", "b")})
	waitRules(t, got, "a@"+src, "b@"+src)
}

// TestConfigMapOverTheLimit: a team's ConfigMap gathered by the selector that holds more
// rules than one source may is refused, with an Event saying so, and none of its rules
// run; the other team's rules load and reload as usual. (Before the limit, 1,892 rules
// in one ConfigMap took the controller from 67 to 759 MB.)
func TestConfigMapOverTheLimit(t *testing.T) {
	ns := testenv.Namespace(t)
	kube := testenv.Kube(t)
	team := map[string]string{"kubecel.dev/rules": "true"}
	var many []string
	for i := range rules.DefaultMaxRulesPerSource + 1 {
		many = append(many, fmt.Sprintf("m%d", i))
	}
	putConfigMap(t, kube, ns, "team-a", team, map[string]string{"rules.yaml": ruleDoc("a")})
	putConfigMap(t, kube, ns, "team-big", team, map[string]string{"rules.yaml": ruleDoc(many...)})
	_, got := watchRules(t, kube, prometheus.NewRegistry(), ConfigMapSelector(kube, ns, labels.SelectorFromSet(team)))
	key := func(cm string) string { return "configmap " + ns + "/" + cm + " key rules.yaml" }
	msg := waitEvent(t, kube, ns, "team-big", ReasonRulesLoadFailed)
	if want := fmt.Sprintf("%s: %d rules, over the limit of %d per source of rules (--max-rules-per-source)", key("team-big"), len(many), rules.DefaultMaxRulesPerSource); !strings.Contains(msg, want) {
		t.Errorf("event message %q, want it to contain %q", msg, want)
	}
	waitRules(t, got, "a@"+key("team-a"))
	putConfigMap(t, kube, ns, "team-a", team, map[string]string{"rules.yaml": ruleDoc("a", "a2")})
	waitRules(t, got, "a@"+key("team-a"), "a2@"+key("team-a"))
}
