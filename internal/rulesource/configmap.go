package rulesource

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubecel/kubecel/rules"
)

// ConfigMap is the ConfigMap namespace/name, whose keys ending in .yaml (sorted) hold
// rules. It is watched by an informer restricted to that name, which needs list and
// watch on that one ConfigMap (resourceNames allows them for requests with the field
// selector metadata.name).
func ConfigMap(kube kubernetes.Interface, namespace, name string) Source {
	return &configMapSource{kube: kube, namespace: namespace, name: name,
		fieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
}

// ConfigMapSelector is every ConfigMap of namespace whose labels match selector, sorted
// by name, each a part of its own whose keys ending in .yaml hold rules. It is watched by
// an informer, which needs list and watch on the ConfigMaps of that namespace.
func ConfigMapSelector(kube kubernetes.Interface, namespace string, selector labels.Selector) Source {
	return &configMapSource{kube: kube, namespace: namespace, labelSelector: selector.String()}
}

type configMapSource struct {
	kube      kubernetes.Interface
	namespace string
	// name is set for one named ConfigMap, with fieldSelector; labelSelector for the
	// selector form.
	name          string
	fieldSelector string
	labelSelector string

	store cache.Store
}

func (s *configMapSource) String() string {
	if s.name != "" {
		return "configmap " + s.namespace + "/" + s.name
	}
	return "configmaps " + s.namespace + "/" + s.labelSelector
}

func (s *configMapSource) start(ctx context.Context, _ time.Duration, changed func()) error {
	lw := cache.NewFilteredListWatchFromClient(s.kube.CoreV1().RESTClient(), "configmaps", s.namespace, func(o *metav1.ListOptions) {
		o.FieldSelector, o.LabelSelector = s.fieldSelector, s.labelSelector
	})
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	notify := func(any) { changed() }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, _ any) { changed() },
		DeleteFunc: notify,
	}); err != nil {
		return fmt.Errorf("watch %s: %w", s, err)
	}
	s.store = inf.GetStore()
	go inf.RunWithContext(ctx)
	// A list that is refused (RBAC) is retried for ever by the informer; the start
	// gives up after syncTimeout with a hint rather than hang.
	wait, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(wait.Done(), inf.HasSynced) {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("watch %s: not listed within %s: check that the controller may list and watch it (see the log for the API server's answer)", s, syncTimeout)
	}
	return nil
}

// syncTimeout bounds the first list of a ConfigMap source (a variable for tests).
var syncTimeout = time.Minute

func (s *configMapSource) parts() []part {
	var cms []*corev1.ConfigMap
	for _, obj := range s.store.List() {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			cms = append(cms, cm)
		}
	}
	slices.SortFunc(cms, func(a, b *corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	if s.name != "" {
		if len(cms) == 0 {
			return []part{{name: s.String(), err: fmt.Errorf("configmap %s/%s not found: create it, or name another with --rules-configmap", s.namespace, s.name)}}
		}
		cms = cms[:1]
	}
	out := make([]part, 0, len(cms))
	for _, cm := range cms {
		out = append(out, configMapPart(cm, s.name == ""))
	}
	return out
}

// configMapPart reads the rules of a ConfigMap: every key ending in .yaml, sorted.
func configMapPart(cm *corev1.ConfigMap, optional bool) part {
	p := part{name: "configmap " + cm.Namespace + "/" + cm.Name, object: cm.DeepCopy(), optional: optional}
	// ConfigMaps found by a selector may be written by different teams: each one's rules
	// own only the children they made (rules.Document.Origin).
	origin := ""
	if optional {
		origin = p.name
	}
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		if strings.HasSuffix(key, ".yaml") {
			p.docs = append(p.docs, rules.Document{Source: p.name + " key " + key, Origin: origin, Data: []byte(cm.Data[key])})
		}
	}
	if len(p.docs) == 0 {
		p.err = fmt.Errorf("%s has no key ending in .yaml: put the rules in a key such as rules.yaml", p.name)
	}
	return p
}
