package check

import (
	"context"
	"fmt"

	"github.com/kubecel/kubecel/engine"
	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/rules"
)

// apiProblems judges the CRDs that the rules' api blocks define against the cluster's,
// as the controller would before it starts the rules: each change that breaks stored
// objects is an error (the controller refuses it), with the number of stored objects it
// breaks. Check does not hold the installation's key, so whose CRD it is stays the
// controller's to tell. A CRD the controller would create or update is a notice.
func apiProblems(ctx context.Context, c *clikit.ClusterFlags, rs *rules.RuleSet) (errs, notices []*rules.Error, err error) {
	if len(rs.CRDs()) == 0 {
		return nil, nil, nil
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, nil, err
	}
	cfg.UserAgent = "kubecel-check"
	apis, err := engine.CheckAPIs(ctx, cfg, rs.Rules)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range apis {
		switch {
		case a.Refused():
			head := fmt.Sprintf("CustomResourceDefinition %s: the controller refuses this api: %s", a.CRD, a.Reason)
			errs = append(errs, &rules.Error{Rule: a.Rule, Field: "api", Message: head})
			for _, f := range a.Fields {
				if f.Breaking {
					errs = append(errs, &rules.Error{Rule: a.Rule, Field: "api", Message: fmt.Sprintf("CustomResourceDefinition %s: %s", a.CRD, f)})
				}
			}
		case a.Action == "create":
			notices = append(notices, &rules.Error{Rule: a.Rule, Field: "api", Message: fmt.Sprintf("the controller creates CustomResourceDefinition %s", a.CRD)})
		case a.Action == "update":
			notices = append(notices, &rules.Error{Rule: a.Rule, Field: "api",
				Message: fmt.Sprintf("the controller updates CustomResourceDefinition %s: %d %s, none breaking", a.CRD, len(a.Fields), clikit.Plural(len(a.Fields), "change", "changes"))})
		}
	}
	return errs, notices, nil
}
