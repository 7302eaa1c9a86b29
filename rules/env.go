package rules

import (
	"fmt"
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// CEL variable names.
const (
	varParent   = "parent"
	varChildren = "children"
	varRefs     = "refs"
	varSelf     = "self"
	varEach     = "each"
	varIndex    = "index"
)

// Parser limits: expressions nest at most this deep and are at most this many
// characters long. Both bound the work of compiling one expression.
const (
	parserRecursionLimit = 100
	parserSizeLimit      = 20_000
)

// libraryEnv is the CEL environment every rule extends: the standard functions, optional
// types, the cel-go extensions and the Kubernetes libraries, without variables. Building
// it is slow, so it is built once.
var libraryEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		cel.EagerlyValidateDeclarations(true),
		cel.ParserRecursionLimit(parserRecursionLimit),
		cel.ParserExpressionSizeLimit(parserSizeLimit),
		ext.Strings(),
		// Version 2 has every list function; version 3 only adds per-overload cost
		// trackers, which CEL rebuilds into a map on every evaluation (most of the cost of
		// evaluating a small expression). The deadline bounds those functions instead.
		ext.Lists(ext.ListsVersion(2)),
		ext.Math(),
		ext.Encoders(),
		ext.Sets(),
		ext.Bindings(),
		ext.TwoVarComprehensions(),
		library.URLs(),
		library.Regex(),
		library.Lists(),
		library.Quantity(),
		library.IP(),
		library.CIDR(),
		library.Format(),
		library.SemverLib(),
	)
})

// envs holds the environments of one rule: which variables an expression may use
// depends on where it is.
type envs struct {
	// parentOnly declares `parent`: the rule's parent.when.
	parentOnly *cel.Env
	// refs adds `refs`: a ref's name, namespace and selector.
	refs *cel.Env
	// base adds `children`: a child's when and forEach, templates, status fields.
	base *cel.Env
	// ready adds `self`: readyWhen.
	ready *cel.Env
	// types resolves the object types built from the parent's schema; nil without one.
	types *apiservercel.DeclTypeProvider
	// typeOpts declare those types; object is the type of one parent.
	typeOpts []cel.EnvOption
	object   *cel.Type
}

// newEnvs builds a rule's environments. parentType is the declared type of `parent`
// (from its schema), or nil for a dynamically typed map; refsType likewise for `refs`
// (see refsDeclType).
func newEnvs(parentType, refsType *apiservercel.DeclType) (*envs, error) {
	lib, err := libraryEnv()
	if err != nil {
		return nil, fmt.Errorf("build the CEL library environment: %w", err)
	}
	e := &envs{}
	object := cel.MapType(cel.StringType, cel.DynType)
	var declared []*apiservercel.DeclType
	for _, t := range []*apiservercel.DeclType{parentType, refsType} {
		if t != nil {
			declared = append(declared, t)
		}
	}
	var opts []cel.EnvOption
	if len(declared) > 0 {
		e.types = apiservercel.NewDeclTypeProvider(declared...)
		typeOpts, err := e.types.EnvOptions(lib.CELTypeProvider())
		if err != nil {
			return nil, fmt.Errorf("declare the schema types: %w", err)
		}
		opts = typeOpts
		e.typeOpts = slices.Clone(typeOpts)
	}
	parentVar, refsVar := object, object
	if parentType != nil {
		parentVar = parentType.CelType()
	}
	if refsType != nil {
		refsVar = refsType.CelType()
	}
	e.object = parentVar
	opts = append(opts, cel.Variable(varParent, parentVar))
	if e.parentOnly, err = lib.Extend(opts...); err != nil {
		return nil, err
	}
	if e.refs, err = e.parentOnly.Extend(cel.Variable(varRefs, refsVar)); err != nil {
		return nil, err
	}
	if e.base, err = e.refs.Extend(cel.Variable(varChildren, cel.MapType(cel.StringType, cel.DynType))); err != nil {
		return nil, err
	}
	if e.ready, err = e.base.Extend(cel.Variable(varSelf, object)); err != nil {
		return nil, err
	}
	return e, nil
}

// rollout builds the environment of rollout.healthy, which reads only `parents`: a list
// of objects typed as `parent` is.
func (e *envs) rollout() (*cel.Env, error) {
	lib, err := libraryEnv()
	if err != nil {
		return nil, fmt.Errorf("build the CEL library environment: %w", err)
	}
	return lib.Extend(append(slices.Clone(e.typeOpts), cel.Variable(varParents, cel.ListType(e.object)))...)
}

// withEach adds a forEach child's `each` (typed as the forEach list's elements) and
// `index` to env.
func withEach(env *cel.Env, each *cel.Type) (*cel.Env, error) {
	return env.Extend(cel.Variable(varEach, each), cel.Variable(varIndex, cel.IntType))
}
