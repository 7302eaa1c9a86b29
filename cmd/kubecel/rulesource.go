package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/rulesource"
	"github.com/kubecel/kubecel/rules"
)

// rulesFlagUsage is the help of --rules on the commands that load the rules once.
const rulesFlagUsage = "rules file, or directory (its *.yaml files, sorted), or - for the standard input; repeatable, all load as one rule set (required)"

// addRulesFlag adds the repeatable --rules to a command that loads the rules once.
func addRulesFlag(f *pflag.FlagSet, paths *[]string) {
	f.StringArrayVar(paths, "rules", nil, rulesFlagUsage)
}

// fileSources turns --rules into sources: - is the standard input, read once here (at
// most one - in all); anything else a file or a directory.
func fileSources(stdin io.Reader, paths []string) ([]rulesource.Source, error) {
	if err := oneStdin(paths, nil); err != nil {
		return nil, err
	}
	var out []rulesource.Source
	for _, p := range paths {
		if p != "-" {
			out = append(out, rulesource.File(p))
			continue
		}
		data, name, err := readInput(stdin, p)
		if err != nil {
			return nil, err
		}
		out = append(out, rulesource.Static(name, data))
	}
	return out, nil
}

// checkRulesPaths refuses, before anything connects to a cluster, a --rules directory
// that holds no *.yaml file.
func checkRulesPaths(paths []string) error {
	for _, p := range paths {
		if p == "-" {
			continue
		}
		if err := rulesource.CheckFile(p); err != nil {
			return err
		}
	}
	return nil
}

// readRules reads the documents of --rules once, for the commands that do not watch.
func readRules(stdin io.Reader, paths []string) ([]rules.Document, error) {
	sources, err := fileSources(stdin, paths)
	if err != nil {
		return nil, err
	}
	return rulesource.Read(sources...)
}

// rulesName names the --rules of a command in messages: the paths (<stdin> for -),
// comma-separated.
func rulesName(paths []string) string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = inputName(p)
	}
	return strings.Join(names, ", ")
}

// ruleSources picks the rule sources of run, in the order their rules join: the
// --rules files and directories, then --rules-configmap, then
// --rules-configmap-selector. cfg is used only for the ConfigMap forms.
func (o *runOptions) ruleSources(cfg *rest.Config) ([]rulesource.Source, error) {
	if len(o.rulesFiles) == 0 && o.rulesConfigMap == "" && o.rulesSelector == "" {
		return nil, errors.New("rules are required: give --rules FILE|DIR, --rules-configmap NAMESPACE/NAME or --rules-configmap-selector NAMESPACE/SELECTOR")
	}
	return ruleSources(o.stdin, o.rulesFiles, o.rulesConfigMap, o.rulesSelector, cfg)
}

// ruleSources makes the sources of --rules (files, directories, - for stdin),
// --rules-configmap NAMESPACE/NAME and --rules-configmap-selector NAMESPACE/SELECTOR,
// in the order their rules join. cfg is used only for the ConfigMap forms.
func ruleSources(stdin io.Reader, files []string, configMap, selector string, cfg *rest.Config) ([]rulesource.Source, error) {
	sources, err := fileSources(stdin, files)
	if err != nil {
		return nil, err
	}
	var kube kubernetes.Interface
	client := func() (kubernetes.Interface, error) {
		if kube == nil {
			var err error
			if kube, err = kubernetes.NewForConfig(cfg); err != nil {
				return nil, err
			}
		}
		return kube, nil
	}
	if configMap != "" {
		ns, name, ok := strings.Cut(configMap, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("--rules-configmap %q: want NAMESPACE/NAME", configMap)
		}
		kube, err := client()
		if err != nil {
			return nil, err
		}
		sources = append(sources, rulesource.ConfigMap(kube, ns, name))
	}
	if selector != "" {
		ns, text, ok := strings.Cut(selector, "/")
		if !ok || ns == "" || text == "" {
			return nil, fmt.Errorf("--rules-configmap-selector %q: want NAMESPACE/SELECTOR, such as kubecel-system/kubecel.dev/rules=true", selector)
		}
		sel, err := labels.Parse(text)
		if err != nil {
			return nil, fmt.Errorf("--rules-configmap-selector %q: %w", selector, err)
		}
		kube, err := client()
		if err != nil {
			return nil, err
		}
		sources = append(sources, rulesource.ConfigMapSelector(kube, ns, sel))
	}
	return sources, nil
}

// ruleNotifier reports rules that cannot run on the ConfigMap that holds them, and to
// report when set.
func ruleNotifier(loader *rulesource.Loader, report func(string)) func(context.Context, string, string, string) {
	return func(_ context.Context, rule, reason, message string) {
		text := fmt.Sprintf("rule %q does not run: %s", rule, message)
		loader.Warn(rule, "Rule"+reason, text)
		if report != nil {
			report(text + " (it starts by itself once it can)")
		}
	}
}
