package rules

import (
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/kubecel/kubecel/rules/internal/celenv"
)

// What a compiled rule keeps alive is mostly its CEL programs, each holding the
// environment it was compiled in, and the types built from its parent's schema. The
// rules of one load share what they can of these (share):
//   - the type of `parent` and the environments, between the rules whose parents have
//     the same schema (the same content, not only the same object: a thousand CRDs of
//     one shape make one type) and that type no ref from a schema;
//   - a program, between the expressions of the same text compiled in the same
//     environment, which makes the same program.
//
// Each rule still parses, checks and judges its own expressions (what they read, their
// cost), so its problems and warnings are what they are without sharing; only the
// program built at the end is taken from the share when there is one. Types,
// environments and programs are immutable and safe for concurrent use.

// share is what the rules of one load share. A nil *share shares nothing.
type share struct {
	mu sync.Mutex
	// keys are the schemas' content keys, by schema object.
	keys map[*apiextensionsv1.JSONSchemaProps]string
	// parents are the types and environments by parent schema key ("" for a parent
	// without a schema).
	parents map[string]*sharedParent
	progs   map[progKey]cel.Program
}

// sharedParent is the type of `parent` of one schema and the environments declaring
// it, built by the first rule that asks.
type sharedParent struct {
	once sync.Once
	typ  *apiservercel.DeclType
	envs *celenv.Envs
	err  error
}

// progKey identifies a program: the same text in the same environment.
type progKey struct {
	env *cel.Env
	src string
}

// newShare makes an empty share.
func newShare() *share {
	return &share{
		keys:    map[*apiextensionsv1.JSONSchemaProps]string{},
		parents: map[string]*sharedParent{},
		progs:   map[progKey]cel.Program{},
	}
}

// parent returns the declared type of `parent` for schema s (nil without one) and the
// environments of a rule whose refs have no declared type, making them the first time.
func (sh *share) parent(s *apiextensionsv1.JSONSchemaProps) (*apiservercel.DeclType, *celenv.Envs, error) {
	build := func() (*apiservercel.DeclType, *celenv.Envs, error) {
		var t *apiservercel.DeclType
		if s != nil {
			t = parentDeclType(s)
		}
		envs, err := celenv.New(t, nil)
		return t, envs, err
	}
	if sh == nil {
		return build()
	}
	key, ok := sh.schemaKey(s)
	if !ok {
		return build()
	}
	sh.mu.Lock()
	p := sh.parents[key]
	if p == nil {
		p = &sharedParent{}
		sh.parents[key] = p
	}
	sh.mu.Unlock()
	p.once.Do(func() { p.typ, p.envs, p.err = build() })
	return p.typ, p.envs, p.err
}

// schemaKey is the key of schema s's content ("" for nil); false when it cannot be
// encoded.
func (sh *share) schemaKey(s *apiextensionsv1.JSONSchemaProps) (string, bool) {
	if s == nil {
		return "", true
	}
	sh.mu.Lock()
	key, ok := sh.keys[s]
	sh.mu.Unlock()
	if ok {
		return key, true
	}
	data, err := json.Marshal(s)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(data)
	key = "schema:" + string(sum[:])
	sh.mu.Lock()
	sh.keys[s] = key
	sh.mu.Unlock()
	return key, true
}

// program returns the program of src in env, built by build the first time.
func (sh *share) program(env *cel.Env, src string, build func() (cel.Program, error)) (cel.Program, error) {
	if sh == nil {
		return build()
	}
	key := progKey{env: env, src: src}
	sh.mu.Lock()
	prg, ok := sh.progs[key]
	sh.mu.Unlock()
	if ok {
		return prg, nil
	}
	prg, err := build()
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if first, ok := sh.progs[key]; ok {
		return first, nil
	}
	sh.progs[key] = prg
	return prg, nil
}
