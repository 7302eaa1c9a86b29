// Package apis keeps the CustomResourceDefinitions that the rules' api blocks define.
//
// Before a rule with an api block starts, Judge reads the CRD of that name from the
// API server and compares it with the one the rule generates (apischema.Compare):
// missing, the same, changed without breaking anything, changed in a way that breaks
// stored objects (refused, with how many stored objects each change breaks), or made
// by someone else. Ensure then creates or updates the CRD with server-side apply under
// the field manager contract.APIFieldManager, and waits until the API server serves it
// (Established).
//
// Guarantees: a CRD is written only when it is missing, or when it carries this
// installation's proof for that CRD name and the rule's origin
// (rules.Identity.ProvesAPI): labels alone prove nothing. A breaking change is never
// applied. Nothing here ever deletes a CRD. A dry run writes nothing (Judge only).
//
// State: none; every call reads the CRD afresh.
package apis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/kubecel/kubecel/rules"
	"github.com/kubecel/kubecel/rules/apischema"
	"github.com/kubecel/kubecel/rules/contract"
)

// CRDs is the resource of CustomResourceDefinitions.
var CRDs = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Action is what Ensure does, or would do, to a rule's CRD.
type Action string

// The actions.
const (
	// Create: the CRD does not exist; it is created.
	Create Action = "create"
	// Unchanged: the CRD is already what the rule generates.
	Unchanged Action = "unchanged"
	// Update: the CRD is the installation's, and the rule changes it without breaking
	// stored objects.
	Update Action = "update"
	// Refused: the rule's api would break stored objects, or the CRD is not the
	// installation's and differs from the rule's; nothing is written.
	Refused Action = "refused"
)

// Judgement is what a rule's api makes of the CRD in the cluster.
type Judgement struct {
	Rule string
	// CRD is the CRD's name (plural.group).
	CRD    string
	Action Action
	// Changes are the changes an apply would make (Update, Refused), each breaking one
	// with the number of stored objects it breaks in Broken (same index; 0 for the
	// others).
	Changes []apischema.Change
	Broken  []int
	// Stored is the number of objects stored under the CRD, counted when a change is
	// breaking.
	Stored int
	// Foreign is set when the CRD exists and does not carry the installation's proof
	// for the rule: kubecel never writes it.
	Foreign bool
	// Deleting is set when the CRD is being deleted: the rule waits until it is gone.
	Deleting bool
	// Generation is the CRD's metadata.generation as last read (after Ensure, as it
	// serves the rule), 0 when it does not exist.
	Generation int64

	desired *apiextensionsv1.CustomResourceDefinition
}

// Reason is why Err refuses, in one line; "" when it does not.
func (j *Judgement) Reason() string {
	switch {
	case j.Deleting:
		return "the CRD is being deleted"
	case j.Foreign && j.Action == Refused:
		return "the CRD was not made by kubecel from this rule, and kubecel never changes it"
	case j.Action == Refused:
		return fmt.Sprintf("the changes break stored objects (%d stored)", j.Stored)
	}
	return ""
}

// Err is nil when the rule may run with its CRD as Ensure leaves it, and otherwise an
// error that says why not: each breaking change with the count of stored objects it
// breaks, or that the CRD is someone else's.
func (j *Judgement) Err() error {
	if j.Action != Refused && !j.Deleting {
		return nil
	}
	return &RefusedError{J: j}
}

// RefusedError is a rule's api that cannot be applied to the cluster's CRD.
type RefusedError struct{ J *Judgement }

func (e *RefusedError) Error() string {
	j := e.J
	var b strings.Builder
	switch {
	case j.Deleting:
		fmt.Fprintf(&b, "CustomResourceDefinition %s is being deleted: the rule starts once it is gone and kubecel creates it again", j.CRD)
		return b.String()
	case j.Foreign:
		fmt.Fprintf(&b, "CustomResourceDefinition %s exists and was not made by this kubecel installation from this rule's source, so kubecel never changes it; it differs from the rule's api:", j.CRD)
	default:
		fmt.Fprintf(&b, "the rule's api changes CustomResourceDefinition %s in ways that break stored objects (%d stored), so it is not applied:", j.CRD, j.Stored)
	}
	for i, c := range j.Changes {
		if j.Foreign {
			fmt.Fprintf(&b, "\n  - %s", c)
			continue
		}
		if c.Breaking {
			fmt.Fprintf(&b, "\n  - %s (breaks %d stored %s)", c, j.Broken[i], plural(j.Broken[i], "object", "objects"))
		}
	}
	if j.Foreign {
		b.WriteString("\n  apply the CRD that `kubecel crd` prints for the rules, or remove the rule's api and name the resource in parent")
	} else {
		b.WriteString("\n  keep the field (add fields instead of changing them), or change the CRD yourself and migrate the stored objects")
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Manager judges and writes the CRDs of the rules' apis.
type Manager struct {
	Client dynamic.Interface
	// Identity proves the CRDs the installation made. Nil (kubecel check, which does
	// not hold the key) judges the changes only: Judgement.Foreign is never set, and
	// Ensure must not be called.
	Identity *rules.Identity
	// Establish is how long Ensure waits for a CRD it wrote to be Established before it
	// returns an error saying the CRD is not served yet (default 30s).
	Establish time.Duration
}

// Desired is the CRD a rule generates, as Ensure applies it: with the installation's
// label, the rule's origin and the proof that the installation made it (ProvesAPI).
// It is nil for a rule without api.
func Desired(id *rules.Identity, r *rules.Rule) *apiextensionsv1.CustomResourceDefinition {
	crd := r.CRD()
	if crd == nil {
		return nil
	}
	crd.Labels = map[string]string{
		contract.LabelManagedBy: contract.ManagedByValue, contract.LabelInstallation: id.Name(), contract.LabelRule: r.Name,
	}
	crd.Annotations = map[string]string{contract.AnnotationProof: id.APIProof(crd.Name, r.Origin)}
	if r.Origin != "" {
		crd.Annotations[contract.AnnotationOrigin] = r.Origin
	}
	return crd
}

// Judge reads the rule's CRD and decides what Ensure would do; nil for a rule without
// api. It sends only reads: the CRD, and, when a change is breaking, the stored objects.
func (m *Manager) Judge(ctx context.Context, r *rules.Rule) (*Judgement, error) {
	desired := Desired(m.Identity, r)
	if desired == nil {
		return nil, nil
	}
	j := &Judgement{Rule: r.Name, CRD: desired.Name, desired: desired}
	live, err := m.get(ctx, desired.Name)
	switch {
	case apierrors.IsNotFound(err):
		j.Action = Create
		return j, nil
	case err != nil:
		return nil, fmt.Errorf("read CustomResourceDefinition %s: %w", desired.Name, err)
	}
	j.Deleting, j.Generation = live.DeletionTimestamp != nil, live.Generation
	// Without the installation's key (kubecel check), whose CRD it is stays unknown.
	j.Foreign = m.Identity != nil && !m.Identity.ProvesAPI(live.Name, r.Origin, live.Labels, live.Annotations)
	if apischema.Same(live, desired) {
		j.Action = Unchanged
		if !j.Foreign && !sameMeta(live, desired) {
			j.Action = Update // the proof or the rule label moved: no schema change
		}
		return j, nil
	}
	j.Changes = apischema.Compare(live, desired)
	j.Broken = make([]int, len(j.Changes))
	switch {
	case j.Foreign:
		j.Action = Refused
		return j, nil
	case len(apischema.Breaking(j.Changes)) == 0:
		j.Action = Update
		return j, nil
	}
	j.Action = Refused
	if err := m.count(ctx, live, j); err != nil {
		return nil, err
	}
	return j, nil
}

// sameMeta reports whether live carries desired's labels and annotations.
func sameMeta(live, desired *apiextensionsv1.CustomResourceDefinition) bool {
	for k, v := range desired.Labels {
		if live.Labels[k] != v {
			return false
		}
	}
	for k, v := range desired.Annotations {
		if live.Annotations[k] != v {
			return false
		}
	}
	return true
}

// count counts the stored objects of the live CRD, and those each breaking change
// breaks, reading them page by page.
func (m *Manager) count(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition, j *Judgement) error {
	version := ""
	for _, v := range live.Spec.Versions {
		if v.Storage || version == "" {
			version = v.Name
		}
	}
	gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: version, Resource: live.Spec.Names.Plural}
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := m.Client.Resource(gvr).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("count the stored objects of %s: %w", live.Name, err)
		}
		for _, obj := range list.Items {
			j.Stored++
			for i, c := range j.Changes {
				if c.Breaking && c.Affects(obj.Object) {
					j.Broken[i]++
				}
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// Ensure makes the rule's CRD what the rule generates, when that is safe, and waits
// until it is Established. It returns the judgement it acted on; its error is the
// judgement's (Judgement.Err), or the failure of a request, or a CRD not Established
// in time. changed reports whether it wrote the CRD.
func (m *Manager) Ensure(ctx context.Context, r *rules.Rule) (j *Judgement, changed bool, err error) {
	if m.Identity == nil {
		return nil, false, errors.New("apis: Ensure needs the installation's identity")
	}
	j, err = m.Judge(ctx, r)
	if err != nil || j == nil {
		return j, false, err
	}
	if err := j.Err(); err != nil {
		return j, false, err
	}
	if j.Action == Create || j.Action == Update {
		// Creating, nothing is forced: a CRD that someone made since Judge read makes the
		// apply fail where it sets other values. Updating, the CRD is proven ours.
		if err := m.apply(ctx, j.desired, j.Action == Update); err != nil {
			return j, false, fmt.Errorf("apply CustomResourceDefinition %s: %w", j.CRD, err)
		}
		changed = true
	}
	j.Generation, err = m.established(ctx, j.CRD)
	return j, changed, err
}

func (m *Manager) get(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u, err := m.Client.Resource(CRDs).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("read CustomResourceDefinition %s: %w", name, err)
	}
	return crd, nil
}

func (m *Manager) apply(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, force bool) error {
	obj, err := apischema.Manifest(crd)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: maps.Clone(obj)}
	_, err = m.Client.Resource(CRDs).Apply(ctx, crd.Name, u, metav1.ApplyOptions{FieldManager: contract.APIFieldManager, Force: force})
	return err
}

// established waits until the CRD's Established condition is true, and returns its
// generation.
func (m *Manager) established(ctx context.Context, name string) (int64, error) {
	timeout := m.Establish
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	var why string
	var generation int64
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		crd, err := m.get(ctx, name)
		if err != nil {
			return false, err
		}
		generation = crd.Generation
		for _, c := range crd.Status.Conditions {
			switch {
			case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
				return true, nil
			case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
				why = c.Message
			}
		}
		return false, nil
	})
	switch {
	case err == nil:
		return generation, nil
	case why != "":
		return 0, fmt.Errorf("CustomResourceDefinition %s is not Established: %s", name, why)
	case errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err):
		return 0, fmt.Errorf("CustomResourceDefinition %s is not Established yet", name)
	}
	return 0, fmt.Errorf("wait for CustomResourceDefinition %s to be Established: %w", name, err)
}
