package rulesfrom

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/rulesource"
	"github.com/kubecel/kubecel/rules"
)

// rulesFlagUsage is the help of --rules on the commands that load the rules once.
const rulesFlagUsage = "rules file, or directory (its *.yaml files, sorted), or - for the standard input; repeatable, all load as one rule set (required)"

// AddRulesFlag adds the repeatable --rules to a command that loads the rules once.
func AddRulesFlag(f *pflag.FlagSet, paths *[]string) {
	f.StringArrayVar(paths, "rules", nil, rulesFlagUsage)
}

// fileSources turns --rules into sources: - is the standard input, read once here (at
// most one - in all); anything else a file or a directory.
func fileSources(stdin io.Reader, paths []string) ([]rulesource.Source, error) {
	if err := clikit.OneStdin(paths, nil); err != nil {
		return nil, err
	}
	var out []rulesource.Source
	for _, p := range paths {
		if p != "-" {
			out = append(out, rulesource.File(p))
			continue
		}
		data, name, err := clikit.ReadInput(stdin, p)
		if err != nil {
			return nil, err
		}
		out = append(out, rulesource.Static(name, data))
	}
	return out, nil
}

// CheckPaths refuses, before anything connects to a cluster, a --rules directory
// that holds no *.yaml file.
func CheckPaths(paths []string) error {
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

// Read reads the documents of --rules once, for the commands that do not watch.
func Read(stdin io.Reader, paths []string) ([]rules.Document, error) {
	sources, err := fileSources(stdin, paths)
	if err != nil {
		return nil, err
	}
	return rulesource.Read(sources...)
}

// Name names the --rules of a command in messages: the paths (<stdin> for -),
// comma-separated.
func Name(paths []string) string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = clikit.InputName(p)
	}
	return strings.Join(names, ", ")
}

// Sources makes the sources of --rules (files, directories, - for stdin),
// --rules-configmap NAMESPACE/NAME and --rules-configmap-selector NAMESPACE/SELECTOR,
// in the order their rules join. cfg is used only for the ConfigMap forms.
func Sources(stdin io.Reader, files []string, configMap, selector string, cfg *rest.Config) ([]rulesource.Source, error) {
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

// Notifier reports rules that cannot run on the ConfigMap that holds them, and to
// report when set.
func Notifier(loader *rulesource.Loader, report func(string)) func(context.Context, string, string, string) {
	return func(_ context.Context, rule, reason, message string) {
		text := fmt.Sprintf("rule %q does not run: %s", rule, message)
		loader.Warn(rule, "Rule"+reason, text)
		if report != nil {
			report(text + " (it starts by itself once it can)")
		}
	}
}
