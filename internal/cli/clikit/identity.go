package clikit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/internal/identity"
	"github.com/kubecel/kubecel/internal/leader"
	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// IdentityFlags name the installation a command acts for and the Secret that holds its
// key (package identity).
type IdentityFlags struct {
	installation string
	secret       string
}

// AddFlags adds --installation and --identity-secret.
func (o *IdentityFlags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.installation, "installation", contract.DefaultInstallation, "name of this kubecel installation, shared by its replicas; two installations in one cluster never act on each other's children")
	f.StringVar(&o.secret, "identity-secret", "", "NAMESPACE/NAME of the Secret that holds the installation's key, created when missing (default: <installation>-identity in the pod's namespace in a cluster, kubecel-system outside one)")
}

// SecretRef names the identity Secret. Options made without flags (kubecel dev) get
// the defaults.
func (o *IdentityFlags) SecretRef() (identity.Secret, error) {
	s := identity.Secret{Installation: o.installation}
	if s.Installation == "" {
		s.Installation = contract.DefaultInstallation
	}
	if o.secret == "" {
		s.Namespace, s.Name = leader.PodNamespace(), identity.SecretName(s.Installation)
		return s, nil
	}
	ns, name, ok := strings.Cut(o.secret, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return s, fmt.Errorf("--identity-secret %q: want NAMESPACE/NAME, such as kubecel-system/kubecel-identity", o.secret)
	}
	s.Namespace, s.Name = ns, name
	return s, nil
}

// identityRetry is how often a controller that cannot reach the API server tries again
// to read its identity.
const identityRetry = 2 * time.Second

// Load reads the installation's identity from the cluster; with identity.Create its
// Secret is made when it is missing, and the key is checked against the installation's
// stored revisions (identity.CheckKey). With retry (a controller), an API server that
// cannot be reached is waited for, each failure logged; an answer that refuses
// (forbidden, a missing namespace, a bad, lost or replaced key) ends the wait with that
// error.
func (o *IdentityFlags) Load(ctx context.Context, cfg *rest.Config, mode identity.Mode, retry bool) (*rules.Identity, error) {
	id, _, err := o.LoadChecked(ctx, cfg, mode, retry)
	return id, err
}

// LoadChecked is load, and reports whether the key replaced an earlier one of the
// installation (identity.CheckKey); identity.CreateNew accepts a key that proves none of
// the installation's revisions.
func (o *IdentityFlags) LoadChecked(ctx context.Context, cfg *rest.Config, mode identity.Mode, retry bool) (*rules.Identity, bool, error) {
	s, err := o.SecretRef()
	if err != nil {
		return nil, false, err
	}
	if err := rules.CheckInstallation(s.Installation); err != nil {
		return nil, false, fmt.Errorf("--installation: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, false, err
	}
	for {
		id, err := identity.Load(ctx, kube, s, mode)
		replaced := false
		var lost *identity.KeyError
		if err == nil && (mode == identity.Create || mode == identity.CreateNew) {
			replaced, err = identity.CheckKey(ctx, kube, s, id)
			if mode == identity.CreateNew && errors.As(err, &lost) {
				err = nil
			}
		}
		var status apierrors.APIStatus
		var noNamespace *identity.NamespaceError
		if err == nil || !retry || errors.As(err, &status) || errors.As(err, &noNamespace) || errors.Is(err, identity.ErrKey) || errors.As(err, &lost) {
			return id, replaced, err
		}
		klog.FromContext(ctx).Error(err, "Cannot read the installation's identity; retrying", "secret", s.String())
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(identityRetry):
		}
	}
}
