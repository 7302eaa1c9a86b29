// Package rules parses, validates, compiles and evaluates kubecel rules files.
//
// A rules file names parent resources and, for each, CEL expressions that compute the
// parent's desired children and status. Load checks everything it can at load time
// (strict YAML, names, CEL syntax and types, dependency cycles, estimated cost) and
// reports every problem with its rule, child, field path and expression; LoadDocuments
// does the same for several named documents (files, ConfigMap keys, each possibly of
// several YAML documents) that form one rule set, each problem naming its document and
// line. Evaluate turns a parent object and the observed children into desired children
// and status; Shape turns the desired children, all at once, into the objects the
// controller applies. Offline, with objects read from files (kubecel render and test),
// RuleSet.Matching picks the rules that take a parent and Rule.EvaluateObserved picks
// its children among the objects (offline.go).
//
// For progressive rollout, each rule has a Revision (what it does, whatever its layout
// and its rollout block), its Document (its source as canonical JSON, to be stored) and
// its Rollout policy, whose Healthy evaluates the rule's rollout.healthy over the parents
// reached so far; RuleSet.Revise compiles a stored Document back within the rule set
// (rollout.go, revise.go).
//
// It also holds the object contract: the labels, annotations, field managers,
// finalizers, conditions and reasons kubecel writes (contract.go), how a child is shaped
// and labelled (Shape), and how an installation proves that an object is a child it
// made (Identity, identity.go): labels can be written by anyone who can write the
// object, a proof only with the installation's key.
//
// Expressions and templates are type-checked against the OpenAPI schemas of the parents
// and children: those of Options.Schemas (CRDs), else those of the built-in Kubernetes
// kinds embedded in builtin.json.gz (see BuiltinSchemas; `go generate` writes it from the
// local control plane). The rules of one load share what they can of what this builds:
// the types and CEL environments of parents of one schema, and the programs of
// expressions of one text in one environment (share.go).
//
// Evaluation is bounded: each expression by a cost limit, each evaluation of a parent by
// a deadline and by a byte budget that every function building a string, list or map
// charges before it builds (cost.go, budget.go; the programs are planned to charge by
// internal/celbudget). What a rule reads of Secrets never reaches a message, and
// neither does a name computed from Secret data: the children and refs so named are
// shown Withheld (sensitive.go, secretnames.go).
//
// The package is pure: it never talks to a cluster and never imports client-go, so the
// language is tested without one.
package rules
