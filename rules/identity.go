package rules

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubecel/kubecel/rules/contract"
)

// What makes an object one of kubecel's children. Labels, annotations, owner references
// and managedFields can be written by anyone who can write the object, so none of them
// proves that kubecel made it. What an attacker cannot write is a message authentication
// code under a key that only the installation holds: when kubecel shapes a child it puts
// in AnnotationProof an HMAC-SHA256, under its installation's key, of everything that
// makes the object that child (see proofText): the installation, the object's kind,
// namespace and name, the rule and where the rule came from, the parent's UID and
// name, and the child id. An object is a child only when that proof verifies for the
// object as it stands; copying the annotation to another object, or changing any of
// those labels, breaks it.

// KeySize is the size of an installation's key in bytes.
const KeySize = 32

// Identity is one installation of kubecel: its name and the secret key its children's
// proofs are made with. Replicas of one installation share both.
type Identity struct {
	name string
	key  []byte
	// macs holds HMACs keyed with key, for Proof to reuse: each child applied and each
	// object cached is proven, and making an HMAC hashes the key twice.
	macs sync.Pool
}

// NewIdentity returns the identity of installation name with key (at least KeySize
// bytes, kept secret: whoever holds it can make objects that pass for children).
func NewIdentity(name string, key []byte) (*Identity, error) {
	if err := CheckInstallation(name); err != nil {
		return nil, err
	}
	if len(key) < KeySize {
		return nil, fmt.Errorf("installation %q: the key has %d bytes, want at least %d", name, len(key), KeySize)
	}
	id := &Identity{name: name, key: append([]byte(nil), key...)}
	id.macs.New = func() any { return hmac.New(sha256.New, id.key) }
	return id, nil
}

// CheckInstallation reports whether name can name an installation: a DNS label, as it
// is a label value and part of Secret names.
func CheckInstallation(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("installation name %q: %s", name, errs[0])
	}
	return nil
}

// NewKey returns a fresh random key for NewIdentity.
func NewKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, errors.New("read random bytes for a key: " + err.Error())
	}
	return key, nil
}

// Name is the installation's name (the value of LabelInstallation on its children).
func (id *Identity) Name() string {
	if id == nil {
		return contract.DefaultInstallation
	}
	return id.name
}

// ChildClaim is what an object says about the child it is: kubecel's labels and
// annotations on it, and where it stands.
type ChildClaim struct {
	GK              schema.GroupKind
	Namespace, Name string
	Installation    string
	Rule, Origin    string
	ParentUID       string
	// Parent is the AnnotationParent value: group/resource/namespace/name.
	Parent string
	Child  string
}

// ClaimOf reads the claim of an object of kind gk from its labels and annotations.
func ClaimOf(gk schema.GroupKind, namespace, name string, labels, annotations map[string]string) ChildClaim {
	return ChildClaim{
		GK: gk, Namespace: namespace, Name: name,
		Installation: labels[contract.LabelInstallation], Rule: labels[contract.LabelRule], Origin: annotations[contract.AnnotationOrigin],
		ParentUID: labels[contract.LabelParentUID], Parent: annotations[contract.AnnotationParent], Child: labels[contract.LabelChild],
	}
}

// proofText is what a proof authenticates. Each part is length-prefixed, so no two
// claims make the same text.
func proofText(c ChildClaim) []byte {
	fields := [...]string{"kubecel-proof-v1", c.Installation, c.GK.Group, c.GK.Kind, c.Namespace, c.Name, c.Rule, c.Origin, c.ParentUID, c.Parent, c.Child}
	n := 0
	for _, s := range fields {
		n += len(s) + 6
	}
	b := make([]byte, 0, n)
	for _, s := range fields {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
		b = append(b, ';')
	}
	return b
}

// Proof is the value of AnnotationProof for a child that makes claim c. A nil identity
// (offline) gives PlaceholderProof.
func (id *Identity) Proof(c ChildClaim) string {
	if id == nil {
		return contract.PlaceholderProof
	}
	mac := id.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(proofText(c))
	var sum [sha256.Size]byte
	proof := base64.RawURLEncoding.EncodeToString(mac.Sum(sum[:0])[:16])
	id.macs.Put(mac)
	return proof
}

// Proves reports whether proof is this installation's proof of claim c: the object was
// made by this installation as that child, and stands where it was made. A nil
// identity proves nothing.
func (id *Identity) Proves(c ChildClaim, proof string) bool {
	if id == nil || proof == "" || c.Installation != id.name || c.Rule == "" || c.ParentUID == "" {
		return false
	}
	return hmac.Equal([]byte(id.Proof(c)), []byte(proof))
}

// ProvesObject reports whether an object is one of this installation's children, as
// its labels, annotations and place claim and its AnnotationProof proves.
func (id *Identity) ProvesObject(obj ObjectMeta) bool {
	gvk := obj.GetObjectKind().GroupVersionKind()
	ann := obj.GetAnnotations()
	c := ClaimOf(gvk.GroupKind(), obj.GetNamespace(), obj.GetName(), obj.GetLabels(), ann)
	return id.Proves(c, ann[contract.AnnotationProof])
}

// ObjectMeta is what ProvesObject reads of an object (an *unstructured.Unstructured is
// one).
type ObjectMeta interface {
	GetObjectKind() schema.ObjectKind
	GetNamespace() string
	GetName() string
	GetLabels() map[string]string
	GetAnnotations() map[string]string
}
