// Package celenv builds the CEL environments that rules' expressions are compiled in:
// the library environment every rule extends (the standard functions, optional types,
// the cel-go extensions and the Kubernetes libraries), and, for one rule, the
// environments of each place an expression can stand, which differ in the variables
// they declare and in the types those variables have (from the parent's schema).
//
// The names of the variables are the package's constants; an activation that resolves
// them is the caller's.
package celenv

import (
	"fmt"
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// The CEL variables of a rule's expressions.
const (
	// Parent is the parent object.
	Parent = "parent"
	// Children maps a child's id to its observed object (a list for a forEach child).
	Children = "children"
	// Refs maps a ref's id to the object (or objects) it reads.
	Refs = "refs"
	// Self is the child a readyWhen judges.
	Self = "self"
	// Each and Index are a forEach child's element and its position.
	Each  = "each"
	Index = "index"
	// Parents is the variable of rollout.healthy: the parents reached so far.
	Parents = "parents"
)

// Parser limits: expressions nest at most this deep and are at most this many
// characters long. Both bound the work of compiling one expression.
const (
	parserRecursionLimit = 100
	parserSizeLimit      = 20_000
)

// Library returns the CEL environment every rule extends: the standard functions,
// optional types, the cel-go extensions and the Kubernetes libraries, without variables.
// Building it is slow, so it is built once; every call returns the same environment.
func Library() (*cel.Env, error) { return buildLibrary() }

var buildLibrary = sync.OnceValues(func() (*cel.Env, error) {
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

// Envs holds the environments of one rule: which variables an expression may use
// depends on where it is. Each is built the first time it is asked for, directly on the
// library environment, so that a rule keeps alive only the environments its programs
// were compiled in (a program holds its environment, and an environment the one it
// extends): a rule without parent.when, refs or readyWhen builds one. An Envs is safe
// for concurrent use, so that rules whose variables have the same types can share one.
//
// The environments declare no macros (has, all, map...), which each would copy and
// build a parser of: expressions are parsed by the library's parser, with its macros
// (Parse), then checked in them. Compile does both; an environment's own Parse and
// Compile would not expand macros.
type Envs struct {
	// Types resolves the object types built from the parent's and the refs' schemas;
	// nil without either.
	Types *apiservercel.DeclTypeProvider

	// typeOpts declare those types; object is the type of one parent (of Parent, and
	// of each of Parents), and refsVar the type of Refs.
	typeOpts []cel.EnvOption
	object   *cel.Type
	refsVar  *cel.Type
	// lib is the library environment, which parses.
	lib *cel.Env
	// mu guards the environments built so far, or the error building them.
	mu                            sync.Mutex
	parentOnly, refs, base, ready envResult
}

// envResult is one environment of Envs once built.
type envResult struct {
	env *cel.Env
	err error
}

// New prepares a rule's environments. parentType is the declared type of Parent (from
// its schema), or nil for a dynamically typed map; refsType likewise for Refs.
func New(parentType, refsType *apiservercel.DeclType) (*Envs, error) {
	lib, err := Library()
	if err != nil {
		return nil, fmt.Errorf("build the CEL library environment: %w", err)
	}
	object := cel.MapType(cel.StringType, cel.DynType)
	e := &Envs{lib: lib, object: object, refsVar: object}
	var declared []*apiservercel.DeclType
	for _, t := range []*apiservercel.DeclType{parentType, refsType} {
		if t != nil {
			declared = append(declared, t)
		}
	}
	if len(declared) > 0 {
		e.Types = apiservercel.NewDeclTypeProvider(declared...)
		if e.typeOpts, err = e.Types.EnvOptions(lib.CELTypeProvider()); err != nil {
			return nil, fmt.Errorf("declare the schema types: %w", err)
		}
	}
	if parentType != nil {
		e.object = parentType.CelType()
	}
	if refsType != nil {
		e.refsVar = refsType.CelType()
	}
	return e, nil
}

// extendLibrary is the library environment with the schema types and vars declared,
// without its macros.
func (e *Envs) extendLibrary(vars ...cel.EnvOption) (*cel.Env, error) {
	return e.lib.Extend(append(append(slices.Clone(e.typeOpts), cel.ClearMacros()), vars...)...)
}

// Parse parses src with the library's parser (its limits and macros), for checking in
// one of the environments.
func (e *Envs) Parse(src string) (*cel.Ast, *cel.Issues) {
	return e.lib.Parse(src)
}

// Compile parses src (Parse) and checks it in env, one of the environments or one made
// from them (WithEach).
func (e *Envs) Compile(env *cel.Env, src string) (*cel.Ast, *cel.Issues) {
	parsed, iss := e.Parse(src)
	if iss.Err() != nil {
		return nil, iss
	}
	return env.Check(parsed)
}

// once returns what build returns, calling it only the first time; build runs with mu
// held.
func (e *Envs) once(r *envResult, build func() (*cel.Env, error)) (*cel.Env, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.env == nil && r.err == nil {
		r.env, r.err = build()
	}
	return r.env, r.err
}

// ParentOnly declares Parent: the rule's parent.when.
func (e *Envs) ParentOnly() (*cel.Env, error) {
	return e.once(&e.parentOnly, func() (*cel.Env, error) {
		return e.extendLibrary(cel.Variable(Parent, e.object))
	})
}

// Refs adds Refs: a ref's name, namespace and selector.
func (e *Envs) Refs() (*cel.Env, error) {
	return e.once(&e.refs, func() (*cel.Env, error) {
		return e.extendLibrary(cel.Variable(Parent, e.object), cel.Variable(Refs, e.refsVar))
	})
}

// Base adds Children: a child's when and forEach, templates, status fields.
func (e *Envs) Base() (*cel.Env, error) {
	return e.once(&e.base, func() (*cel.Env, error) {
		return e.extendLibrary(cel.Variable(Parent, e.object), cel.Variable(Refs, e.refsVar),
			cel.Variable(Children, cel.MapType(cel.StringType, cel.DynType)))
	})
}

// Ready adds Self: readyWhen.
func (e *Envs) Ready() (*cel.Env, error) {
	base, err := e.Base()
	if err != nil {
		return nil, err
	}
	return e.once(&e.ready, func() (*cel.Env, error) {
		return base.Extend(cel.Variable(Self, cel.MapType(cel.StringType, cel.DynType)))
	})
}

// Rollout builds the environment of rollout.healthy, which reads only Parents: a list
// of objects typed as Parent is.
func (e *Envs) Rollout() (*cel.Env, error) {
	return e.extendLibrary(cel.Variable(Parents, cel.ListType(e.object)))
}

// WithEach adds a forEach child's Each (typed as the forEach list's elements) and Index
// to env.
func WithEach(env *cel.Env, each *cel.Type) (*cel.Env, error) {
	return env.Extend(cel.Variable(Each, each), cel.Variable(Index, cel.IntType))
}

// IsDynamic reports whether a static type says nothing of the values it stands for
// (dyn, any, a type parameter).
func IsDynamic(t *cel.Type) bool {
	switch t.Kind() {
	case types.DynKind, types.AnyKind, types.TypeParamKind:
		return true
	}
	return false
}
