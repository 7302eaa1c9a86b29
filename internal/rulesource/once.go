package rulesource

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/rules"
)

// LoadOnce loads the rules of sources once, for the commands that read the rules a
// controller runs (kubecel trace, plan): the rule set is the one a Loader's Start would
// hand to Apply for the same sources, with the same refusals (a named source that does
// not load is the error; a ConfigMap of a selector that does not load is left out, and
// leftOut, when set, is told which and why). Nothing is watched: each ConfigMap source
// is listed once with its selectors, which needs list on those ConfigMaps and no watch.
// No Event is recorded and no metric registered.
func LoadOnce(ctx context.Context, sources []Source, opts rules.Options, leftOut func(source string, err error)) (*rules.RuleSet, error) {
	listed := make([]Source, 0, len(sources))
	for _, s := range sources {
		cm, ok := s.(*configMapSource)
		if !ok {
			listed = append(listed, s)
			continue
		}
		snapshot, err := cm.listOnce(ctx)
		if err != nil {
			return nil, err
		}
		listed = append(listed, snapshot)
	}
	var rs *rules.RuleSet
	l, err := New(Options{
		Sources:     listed,
		Apply:       func(_ context.Context, set *rules.RuleSet) { rs = set },
		LoadOptions: func(context.Context) rules.Options { return opts },
	})
	if err != nil {
		return nil, err
	}
	l.leftOut = leftOut
	// The Loader's lines are a controller's ("Loaded rules", "Rules reload failed"): a
	// command says what it read in its own words, through leftOut and its errors.
	if err := l.reload(klog.NewContext(ctx, logr.Discard()), true); err != nil {
		return nil, err
	}
	if rs == nil {
		return nil, errors.New("no rules loaded") // reload applies every set that loads
	}
	return rs, nil
}

// listOnce returns a copy of the source whose content is one list of its ConfigMaps,
// made now.
func (s *configMapSource) listOnce(ctx context.Context) (*configMapSource, error) {
	list, err := s.kube.CoreV1().ConfigMaps(s.namespace).List(ctx, metav1.ListOptions{FieldSelector: s.fieldSelector, LabelSelector: s.labelSelector})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s, err)
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for i := range list.Items {
		if err := store.Add(&list.Items[i]); err != nil {
			return nil, fmt.Errorf("read %s: %w", s, err)
		}
	}
	snapshot := *s
	snapshot.store = store
	return &snapshot, nil
}
