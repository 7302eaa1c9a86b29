package main

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/engine"
)

// rulesSource picks the rules file or the rules ConfigMap (NAMESPACE/NAME).
func (o *runOptions) rulesSource(cfg *rest.Config) (engine.RulesSource, error) {
	switch {
	case o.rulesFile != "" && o.rulesConfigMap != "":
		return nil, fmt.Errorf("--rules and --rules-configmap are exclusive")
	case o.rulesFile == "-":
		data, _, err := readInput(o.stdin, "-")
		if err != nil {
			return nil, err
		}
		return stdinSource(data), nil
	case o.rulesFile != "":
		return engine.FileSource(o.rulesFile), nil
	case o.rulesConfigMap != "":
		ns, name, ok := strings.Cut(o.rulesConfigMap, "/")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("--rules-configmap %q: want NAMESPACE/NAME", o.rulesConfigMap)
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return &engine.ConfigMapSource{Client: kube, Namespace: ns, Name: name}, nil
	}
	return nil, fmt.Errorf("one of --rules FILE or --rules-configmap NAMESPACE/NAME is required")
}

// stdinSource is rules read once from the standard input (--rules -). They never
// change, so the loader's periodic checks find nothing to reload.
type stdinSource []byte

func (s stdinSource) Read(context.Context) ([]byte, error) { return s, nil }
func (s stdinSource) String() string                       { return stdinName }

// warnOnSource records a Warning Event on the rules ConfigMap, when that is the source.
func warnOnSource(ctrl *engine.Controller, src engine.RulesSource, reason, message string) {
	if cm, ok := src.(*engine.ConfigMapSource); ok && cm.Last() != nil {
		ctrl.Warn(cm.Last(), reason, message)
	}
}

// ruleNotifier reports rules that cannot run on the rules ConfigMap.
func ruleNotifier(ctrl **engine.Controller, src engine.RulesSource) func(context.Context, string, string, string) {
	return func(_ context.Context, rule, reason, message string) {
		if *ctrl != nil {
			warnOnSource(*ctrl, src, "Rule"+reason, fmt.Sprintf("rule %q does not run: %s", rule, message))
		}
	}
}
