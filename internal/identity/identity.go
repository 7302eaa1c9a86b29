// Package identity keeps an installation's identity in the cluster: the Secret that
// holds the key with which the installation proves its children (rules.Identity).
// Every replica of the installation, and every command that must tell its children from
// look-alikes (run, plan), reads the same Secret; the first replica to start creates it.
package identity

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// DataKey is the key of the Secret's data that holds the installation's key.
const DataKey = "key"

// ErrKey is the error of an identity Secret whose key is missing or too short.
var ErrKey = errors.New("the Secret holds no usable key")

// NamespaceError is the error of an identity Secret whose namespace does not exist.
type NamespaceError struct{ Namespace string }

func (e *NamespaceError) Error() string {
	return fmt.Sprintf("namespace %s does not exist: create it (kubectl create namespace %s) or name another with --identity-secret", e.Namespace, e.Namespace)
}

// SecretName is the default name of installation's identity Secret.
func SecretName(installation string) string { return installation + "-identity" }

// Secret names an installation's identity Secret.
type Secret struct {
	Installation    string
	Namespace, Name string
}

func (s Secret) String() string { return s.Namespace + "/" + s.Name }

// Mode says what Load does when the Secret does not exist.
type Mode int

const (
	// ReadOnly (a read-only command, a dry run): the installation has made nothing yet,
	// and a new key, used once, proves nothing in the cluster: every child is then a
	// create.
	ReadOnly Mode = iota
	// Create (kubecel run) makes the Secret with a new key, unless the installation's
	// stored revisions show that it had a key (a KeyError).
	Create
	// CreateNew makes the Secret with a new key whatever the installation made before
	// (kubecel run --new-identity).
	CreateNew
	// Required reads the key and fails when the Secret does not exist: what a command
	// that signs for the installation takes (kubecel rollout pause, resume, undo).
	Required
)

// Load reads the installation's key from its Secret, and makes the Secret when it does
// not exist and mode says so.
func Load(ctx context.Context, kube kubernetes.Interface, s Secret, mode Mode) (*rules.Identity, error) {
	if err := rules.CheckInstallation(s.Installation); err != nil {
		return nil, err
	}
	where := "the installation's identity Secret " + s.String()
	got, err := kube.CoreV1().Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && mode == Create {
		if err := checkMade(ctx, kube, s); err != nil {
			return nil, err
		}
	}
	switch {
	case apierrors.IsNotFound(err) && mode == Required:
		return nil, fmt.Errorf("read %s: it does not exist: the installation never ran, or runs under another one (--installation, --identity-secret)", where)
	case apierrors.IsNotFound(err) && mode == ReadOnly:
		klog.FromContext(ctx).V(1).Info("No identity Secret: this installation has made no children yet", "secret", s.String())
		key, err := rules.NewKey()
		if err != nil {
			return nil, err
		}
		return rules.NewIdentity(s.Installation, key)
	case apierrors.IsNotFound(err):
		if got, err = createSecret(ctx, kube, s); err != nil {
			return nil, fmt.Errorf("create %s: %w", where, err)
		}
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("read %s: %w; kubecel needs get (and, to create it, create) on it, or name another with --identity-secret", where, err)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", where, err)
	}
	id, err := rules.NewIdentity(s.Installation, got.Data[DataKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %w (%v); a new key makes every child of the installation a stranger to it", where, ErrKey, err)
	}
	return id, nil
}

// createSecret creates the identity Secret with a new key, or reads the one that a
// replica starting at the same time created first.
func createSecret(ctx context.Context, kube kubernetes.Interface, s Secret) (*corev1.Secret, error) {
	key, err := rules.NewKey()
	if err != nil {
		return nil, err
	}
	obj := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: map[string]string{contract.LabelInstallation: s.Installation}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{DataKey: key},
	}
	created, err := kube.CoreV1().Secrets(s.Namespace).Create(ctx, obj, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return kube.CoreV1().Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	case apierrors.IsNotFound(err):
		return nil, &NamespaceError{Namespace: s.Namespace}
	case err != nil:
		return nil, err
	}
	klog.FromContext(ctx).Info("Created the installation's identity Secret", "secret", s.String(), "installation", s.Installation)
	return created, nil
}
