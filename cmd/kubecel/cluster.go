package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// reachTimeout bounds the first request of a command to the API server, unless
// --request-timeout says otherwise.
const reachTimeout = 15 * time.Second

// clusterFlags are kubectl's connection flags, from k8s.io/cli-runtime: --kubeconfig,
// --context, --cluster, --user, --server, --as, --as-group, --as-uid, --token, TLS
// files and --request-timeout. Namespaces are not among them: a command that filters by
// namespace has its own -n, which never defaults to the kubeconfig's namespace.
type clusterFlags struct {
	config *genericclioptions.ConfigFlags
}

func newClusterFlags() *clusterFlags {
	f := genericclioptions.NewConfigFlags(false)
	f.CacheDir = nil  // kubecel keeps no discovery cache on disk
	f.Namespace = nil // see clusterFlags
	return &clusterFlags{config: f}
}

// kubeconfigFile connects with the given kubeconfig file and no other flag.
func kubeconfigFile(path string) *clusterFlags {
	c := newClusterFlags()
	*c.config.KubeConfig = path
	return c
}

// addFlags adds the flags, with the command's own description of --kubeconfig.
func (c *clusterFlags) addFlags(fs *pflag.FlagSet, kubeconfigUsage string) {
	c.config.AddFlags(fs)
	fs.Lookup("kubeconfig").Usage = kubeconfigUsage
}

// noKubeconfigError says that there is no cluster to connect to, and where kubecel looked.
type noKubeconfigError struct {
	env string // $KUBECONFIG
}

func (e *noKubeconfigError) Error() string {
	where := "$KUBECONFIG (not set), ~/.kube/config"
	if e.env != "" {
		where = fmt.Sprintf("$KUBECONFIG (%s)", e.env)
	}
	return fmt.Sprintf("no kubeconfig: looked in %s and the in-cluster service account; pass --kubeconfig FILE", where)
}

// restConfig loads the client configuration the way kubectl does. Where kubectl would
// quietly fall back to http://localhost:8080 (nothing to load, or no current context),
// it says what is missing instead.
func (c *clusterFlags) restConfig() (*rest.Config, error) {
	f := c.config
	loader := f.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	if *f.APIServer == "" {
		switch {
		case len(raw.Clusters) == 0 && *f.KubeConfig != "":
			return nil, fmt.Errorf("kubeconfig %s defines no cluster", *f.KubeConfig)
		case len(raw.Clusters) == 0:
			if _, err := rest.InClusterConfig(); err != nil {
				return nil, &noKubeconfigError{env: os.Getenv(clientcmd.RecommendedConfigPathEnvVar)}
			}
		case raw.CurrentContext == "" && *f.Context == "" && *f.ClusterName == "":
			msg := "the kubeconfig sets no current-context: pass --context NAME or --cluster NAME"
			if len(raw.Contexts) > 0 {
				contexts := slices.Sorted(maps.Keys(raw.Contexts))
				msg += " (contexts: " + strings.Join(contexts, ", ") + ")"
			}
			return nil, errors.New(msg)
		}
	}
	return f.ToRESTConfig()
}

// reach asks the API server for its version, so that a command that cannot talk to it
// fails at once with the cause, not later with a consequence.
func reach(cfg *rest.Config) error {
	probe := rest.CopyConfig(cfg)
	if probe.Timeout == 0 {
		probe.Timeout = reachTimeout
	}
	client, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return err
	}
	if _, err := client.ServerVersion(); err != nil {
		return serverError(cfg.Host, err)
	}
	return nil
}

// serverError names the API server in an error from it: "cannot reach" when no answer
// came (connection refused, DNS, TLS, timeout), else the server's answer.
func serverError(host string, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Errorf("the API server at %s: %w", host, err)
	}
	return fmt.Errorf("cannot reach the API server at %s: %w", host, err)
}

// waitProgress returns the function to call at each poll of a wait for what: every
// interval, it prints on w that the wait goes on, and for how long.
func waitProgress(w io.Writer, every time.Duration, what string) func(now time.Time) {
	var start, next time.Time
	return func(now time.Time) {
		if start.IsZero() {
			start, next = now, now.Add(every)
			return
		}
		if now.Before(next) {
			return
		}
		fmt.Fprintf(w, "waiting for %s (%s)...\n", what, now.Sub(start).Round(time.Second))
		for !now.Before(next) {
			next = next.Add(every)
		}
	}
}
