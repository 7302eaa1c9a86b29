package clikit

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
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ReachTimeout bounds the first request of a command to the API server, unless
// --request-timeout says otherwise.
const ReachTimeout = 15 * time.Second

// ClusterFlags are kubectl's connection flags: --kubeconfig, --context, --cluster, --user,
// --server, --as, --as-group, --as-uid, --as-user-extra, --token, TLS files,
// --request-timeout and --disable-compression, with kubectl's names and help. They are
// bound with client-go's clientcmd, which kubectl's k8s.io/cli-runtime wraps: cli-runtime
// links kustomize, whose use of package plugin makes the linker export every symbol, and
// the binary a third larger (see docs/benchmarks.md). Namespaces are not among them: a command that filters by
// namespace has its own -n, which never defaults to the kubeconfig's namespace.
type ClusterFlags struct {
	kubeconfig string
	userExtra  []string // --as-user-extra KEY=VALUE, repeated
	overrides  clientcmd.ConfigOverrides
}

// NewClusterFlags returns the flags with no value given: kubectl's defaults.
func NewClusterFlags() *ClusterFlags {
	return &ClusterFlags{overrides: clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults}}
}

// KubeconfigFile connects with the given kubeconfig file and no other flag.
func KubeconfigFile(path string) *ClusterFlags {
	c := NewClusterFlags()
	c.kubeconfig = path
	return c
}

// overrideFlags names the flags that override the kubeconfig, with kubectl's help.
func overrideFlags() clientcmd.ConfigOverrideFlags {
	names := clientcmd.RecommendedConfigOverrideFlags("")
	// An empty name binds no flag: no namespace (see ClusterFlags), no basic
	// authentication, no proxy (kubectl has neither).
	names.ContextOverrideFlags.Namespace.LongName = ""
	names.AuthOverrideFlags.Username.LongName = ""
	names.AuthOverrideFlags.Password.LongName = ""
	names.ClusterOverrideFlags.ProxyURL.LongName = ""
	// Where kubectl's shorthand or words differ from clientcmd's.
	names.ClusterOverrideFlags.APIServer.ShortName = "s"
	names.AuthOverrideFlags.Impersonate.Description = "Username to impersonate for the operation. User could be a regular user or a service account in a namespace."
	names.AuthOverrideFlags.ImpersonateUID.Description = "UID to impersonate for the operation."
	names.ClusterOverrideFlags.TLSServerName.Description = "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used"
	return names
}

// AddFlags adds the flags, with the command's own description of --kubeconfig.
func (c *ClusterFlags) AddFlags(fs *pflag.FlagSet, kubeconfigUsage string) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", c.kubeconfig, kubeconfigUsage)
	clientcmd.BindOverrideFlags(&c.overrides, fs, overrideFlags())
	fs.StringArrayVar(&c.userExtra, "as-user-extra", []string{}, "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key.")
}

// Loader reads the kubeconfig as kubectl does: --kubeconfig, else $KUBECONFIG, else
// ~/.kube/config, else the in-cluster service account, with the flags on top.
func (c *ClusterFlags) Loader() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	// What a configuration that loads nothing is compared with, to fall back to in-cluster.
	rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
	overrides := c.overrides
	if len(c.userExtra) > 0 {
		// As kubectl does, a value without "=" is ignored.
		extra := map[string][]string{}
		for _, kv := range c.userExtra {
			if k, v, ok := strings.Cut(kv, "="); ok {
				extra[k] = append(extra[k], v)
			}
		}
		overrides.AuthInfo.ImpersonateUserExtra = extra
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &overrides)
}

// NoKubeconfigError says that there is no cluster to connect to, and where kubecel looked.
type NoKubeconfigError struct {
	env string // $KUBECONFIG
}

func (e *NoKubeconfigError) Error() string {
	where := "$KUBECONFIG (not set), ~/.kube/config"
	if e.env != "" {
		where = fmt.Sprintf("$KUBECONFIG (%s)", e.env)
	}
	return fmt.Sprintf("no kubeconfig: looked in %s and the in-cluster service account; pass --kubeconfig FILE", where)
}

// RESTConfig loads the client configuration the way kubectl does. Where kubectl would
// quietly fall back to http://localhost:8080 (nothing to load, or no current context),
// it says what is missing instead.
func (c *ClusterFlags) RESTConfig() (*rest.Config, error) {
	loader := c.Loader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	if name := c.overrides.CurrentContext; name != "" && raw.Contexts[name] == nil {
		return nil, fmt.Errorf("context %q is not in the kubeconfig (%s)", name, namesOf("contexts", raw.Contexts))
	}
	if name := c.overrides.Context.Cluster; name != "" && raw.Clusters[name] == nil && c.overrides.ClusterInfo.Server == "" {
		return nil, fmt.Errorf("cluster %q is not in the kubeconfig (%s)", name, namesOf("clusters", raw.Clusters))
	}
	if c.overrides.ClusterInfo.Server == "" {
		switch {
		case len(raw.Clusters) == 0 && c.kubeconfig != "":
			return nil, fmt.Errorf("kubeconfig %s defines no cluster", c.kubeconfig)
		case len(raw.Clusters) == 0:
			if _, err := rest.InClusterConfig(); err != nil {
				return nil, &NoKubeconfigError{env: os.Getenv(clientcmd.RecommendedConfigPathEnvVar)}
			}
		case raw.CurrentContext == "" && c.overrides.CurrentContext == "" && c.overrides.Context.Cluster == "":
			msg := "the kubeconfig sets no current-context: pass --context NAME or --cluster NAME"
			if len(raw.Contexts) > 0 {
				msg += " (" + namesOf("contexts", raw.Contexts) + ")"
			}
			return nil, errors.New(msg)
		}
	}
	return loader.ClientConfig()
}

// namesOf lists the names of a kubeconfig's contexts or clusters: "contexts: a, b", or
// "it has no contexts".
func namesOf[T any](what string, m map[string]T) string {
	if len(m) == 0 {
		return "it has no " + what
	}
	return what + ": " + strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// Reach asks the API server for its version, so that a command that cannot talk to it
// fails at once with the cause, not later with a consequence.
func Reach(cfg *rest.Config) error {
	probe := rest.CopyConfig(cfg)
	if probe.Timeout == 0 {
		probe.Timeout = ReachTimeout
	}
	client, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return err
	}
	if _, err := client.ServerVersion(); err != nil {
		return ServerError(cfg.Host, err)
	}
	return nil
}

// ServerError names the API server in an error from it: "cannot reach" when no answer
// came (connection refused, DNS, TLS, timeout), else the server's answer.
func ServerError(host string, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Errorf("the API server at %s: %w", host, err)
	}
	return fmt.Errorf("cannot reach the API server at %s: %w", host, err)
}

// WaitProgress returns the function to call at each poll of a wait for what: every
// interval, it prints on w that the wait goes on, and for how long.
func WaitProgress(w io.Writer, every time.Duration, what string) func(now time.Time) {
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
