package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubecel/kubecel/engine/internal/apis"
	"github.com/kubecel/kubecel/engine/internal/watch"
	"github.com/kubecel/kubecel/engine/plan"
	"github.com/kubecel/kubecel/internal/dynclient"
	"github.com/kubecel/kubecel/rules"
)

// A rule with an api block defines its parent resource: before it starts, its CRD is
// created or updated (engine/internal/apis) and Established. An api that would break
// stored objects, or a CRD of that name that is not the installation's and differs, is
// refused: the rule waits, and a version of it that ran before keeps running.

// errWouldCreate is the reason a rule waits in a dry run: its CRD does not exist, and
// only a controller that writes creates it.
var errWouldCreate = errors.New("its CustomResourceDefinition does not exist yet: kubecel run creates it")

// ensureAPI makes the rule's CRD what its api defines (in a dry run, only judges it),
// and returns the schema its parents are listed under (watch.Rule.ParentSchema). A
// rule without api needs nothing.
func (l *lifecycle) ensureAPI(ctx context.Context, r *rules.Rule) (string, error) {
	if r.API() == nil {
		return "", nil
	}
	if l.opts.DryRun {
		j, err := l.apis.Judge(ctx, r)
		switch {
		case err != nil:
			return "", err
		case j.Action == apis.Create:
			return "", fmt.Errorf("CustomResourceDefinition %s: %w", j.CRD, errWouldCreate)
		}
		return strconv.FormatInt(j.Generation, 10), j.Err()
	}
	j, changed, err := l.apis.Ensure(ctx, r)
	if changed {
		klog.FromContext(ctx).Info("Applied the rule's CustomResourceDefinition", "rule", r.Name, "crd", j.CRD, "action", string(j.Action), "changes", len(j.Changes))
		l.watcher.Reset() // discovery learns the new resource or version
	}
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(j.Generation, 10), nil
}

// keepsOld reports whether a rule's new version that failed to start with err leaves
// the version that runs running: an api change refused.
func keepsOld(err error) bool {
	var refused *apis.RefusedError
	return errors.As(err, &refused)
}

// APIs judges the CRD of every one of rs that has an api block against the cluster, as a
// controller would before starting the rule, and writes nothing (kubecel plan reports
// the result).
func (c *Controller) APIs(ctx context.Context, rs []*rules.Rule) ([]plan.APIChange, error) {
	return judgeAPIs(ctx, c.life.apis, rs)
}

// CheckAPIs is Controller.APIs for a caller without the installation's key (kubecel
// check): it judges the changes to each CRD, and not whose CRD it is.
func CheckAPIs(ctx context.Context, cfg *rest.Config, rs []*rules.Rule) ([]plan.APIChange, error) {
	client, err := dynclient.New(cfg)
	if err != nil {
		return nil, err
	}
	return judgeAPIs(ctx, &apis.Manager{Client: client}, rs)
}

func judgeAPIs(ctx context.Context, m *apis.Manager, rs []*rules.Rule) ([]plan.APIChange, error) {
	var out []plan.APIChange
	for _, r := range rs {
		j, err := m.Judge(ctx, r)
		if err != nil {
			return out, fmt.Errorf("rule %q: %w", r.Name, err)
		}
		if j == nil {
			continue
		}
		a := plan.APIChange{Rule: j.Rule, CRD: j.CRD, Action: string(j.Action), Foreign: j.Foreign, Stored: j.Stored, Reason: j.Reason()}
		if j.Deleting {
			a.Action = string(apis.Refused)
		}
		for i, ch := range j.Changes {
			a.Fields = append(a.Fields, plan.APIFieldChange{Path: ch.Path, What: ch.What, Breaking: ch.Breaking && !j.Foreign, Breaks: j.Broken[i]})
		}
		out = append(out, a)
	}
	return out, nil
}

// servedAs is a parent as the API server will serve it once the CRD of the rule's api
// is applied: a plan of an api edit sees the defaults of the new fields, as the
// controller will when it lists the parents again (watch.Rule.ParentSchema). A parent
// of a rule without api, or one the new schema refuses (an edit that is refused
// anyway), is returned as it is.
func servedAs(st *watch.Rule, parent *unstructured.Unstructured) *unstructured.Unstructured {
	def := st.Rule.API()
	if def == nil {
		return parent
	}
	admitted, err := def.Admit(parent.Object)
	if err != nil {
		return parent
	}
	return &unstructured.Unstructured{Object: admitted.Object}
}
