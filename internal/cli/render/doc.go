// Package render is the logic of kubecel render: it loads the rules offline (with the
// schemas of a CRD directory if given), admits each parent as the API server would
// store it, evaluates every rule that selects it with the observed objects, and prints
// the children and status the rules compute, with notes, as YAML or JSON. kubecel test
// renders its parents through the same Output.
package render
