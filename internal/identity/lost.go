package identity

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/contract"
)

// An installation that ran has stored its rules' revisions (ControllerRevisions in its
// identity Secret's namespace), each with a proof under its key. They tell a lost key
// (the Secret deleted) or a replaced one (a Secret with another key) from an installation
// that never ran: a new key over them would silently make every child the installation
// made a stranger to it, which then reports ChildExists instead of following its rules.

// labelRevision is the label of a stored revision that holds its hash
// (internal/rollout.LabelRevision).
const labelRevision = "kubecel.dev/revision"

// annotationOrigin is the annotation of a stored revision that holds the origin of its
// text (internal/rollout.AnnotationOrigin).
const annotationOrigin = "rollout.kubecel.dev/origin"

// KeyError reports an identity Secret that is missing, or holds another key, while the
// installation's stored revisions show it made objects with a key.
type KeyError struct {
	Secret Secret
	// Missing is set when the Secret does not exist, unset when its key does not
	// verify any revision.
	Missing bool
	// Revisions counts the installation's stored revisions, of which Example is one.
	Revisions int
	Example   string
}

func (e *KeyError) Error() string {
	what := fmt.Sprintf("the installation's identity Secret %s does not exist", e.Secret)
	if !e.Missing {
		what = fmt.Sprintf("the key in the installation's identity Secret %s is not the one installation %q made its objects with", e.Secret, e.Secret.Installation)
	}
	return fmt.Sprintf("%s, but installation %q has %d stored rule revisions in %s (such as %s) proven with its earlier key: the key was lost or replaced, "+
		"and a new one would make every child the installation made a stranger to it. Restore the Secret from a backup (docs/operations.md, \"Backing up the identity key\"), "+
		"or start once with --new-identity to go on with a new key",
		what, e.Secret.Installation, e.Revisions, e.Secret.Namespace, e.Example)
}

// revisions lists the installation's stored revisions.
func revisions(ctx context.Context, kube kubernetes.Interface, s Secret) ([]revision, error) {
	sel := labels.Set{contract.LabelInstallation: s.Installation, contract.LabelManagedBy: contract.ManagedByValue}
	list, err := kube.AppsV1().ControllerRevisions(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("list the installation's revisions in %s: %w", s.Namespace, err)
	}
	out := make([]revision, 0, len(list.Items))
	for _, cr := range list.Items {
		out = append(out, revision{name: cr.Name, rule: cr.Labels[contract.LabelRule], hash: cr.Labels[labelRevision],
			origin: cr.Annotations[annotationOrigin], proof: cr.Annotations[contract.AnnotationProof], document: cr.Data.Raw})
	}
	return out, nil
}

type revision struct {
	name, rule, origin, hash, proof string
	document                        []byte
}

// checkMade returns a KeyError when the installation has stored revisions: made when
// its Secret is missing, before a new key is minted.
func checkMade(ctx context.Context, kube kubernetes.Interface, s Secret) error {
	revs, err := revisions(ctx, kube, s)
	if err != nil || len(revs) == 0 {
		return err
	}
	return &KeyError{Secret: s, Missing: true, Revisions: len(revs), Example: revs[0].name}
}

// CheckKey looks at the installation's stored revisions with id's key. It returns a
// KeyError when there are some and the key proves none of them: the Secret was replaced
// by one with another key. replaced reports revisions the key does not prove: the
// installation had an earlier key (a lost Secret, then kubecel run --new-identity).
func CheckKey(ctx context.Context, kube kubernetes.Interface, s Secret, id *rules.Identity) (replaced bool, err error) {
	revs, err := revisions(ctx, kube, s)
	if err != nil {
		return false, err
	}
	proven := 0
	for _, r := range revs {
		if r.hash != "" && r.proof == id.RevisionProof(r.rule, r.origin, r.hash, r.document) {
			proven++
		}
	}
	replaced = proven < len(revs)
	if proven == 0 && len(revs) > 0 {
		return replaced, &KeyError{Secret: s, Revisions: len(revs), Example: revs[0].name}
	}
	return replaced, nil
}
