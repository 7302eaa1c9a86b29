package celenv

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// widgetType is a parent type with one field, spec.replicas.
func widgetType() *apiservercel.DeclType {
	spec := apiservercel.NewObjectType("object", map[string]*apiservercel.DeclField{
		"replicas": apiservercel.NewDeclField("replicas", apiservercel.IntType, false, nil, nil),
	})
	return apiservercel.NewObjectType("object", map[string]*apiservercel.DeclField{
		"spec": apiservercel.NewDeclField("spec", spec, false, nil, nil),
	}).MaybeAssignTypeName("widget")
}

// TestEnvsDeclareTheVariablesOfEachPlace compiles expressions in each environment of a
// rule: a variable is known only where the rule's language says it is.
func TestEnvsDeclareTheVariablesOfEachPlace(t *testing.T) {
	e, err := New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	envs := map[string]*cel.Env{}
	for name, get := range map[string]func() (*cel.Env, error){"parentOnly": e.ParentOnly, "refs": e.Refs, "base": e.Base, "ready": e.Ready, "rollout": e.Rollout} {
		if envs[name], err = get(); err != nil {
			t.Fatal(err)
		}
	}
	if envs["each"], err = WithEach(envs["base"], cel.StringType); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		expr  string
		known []string // the environments that compile it
	}{
		{`parent.metadata.name == "a"`, []string{"parentOnly", "refs", "base", "ready", "each"}},
		{`refs.x.size() > 0`, []string{"refs", "base", "ready", "each"}},
		{`children.x.size() > 0`, []string{"base", "ready", "each"}},
		{`self.status.ready == true`, []string{"ready"}},
		{`each.size() > index`, []string{"each"}},
		{`parents.all(p, p.metadata.name != "")`, []string{"rollout"}},
	}
	for _, tt := range tests {
		for name, env := range envs {
			_, iss := e.Compile(env, tt.expr)
			want := strings.Contains(" "+strings.Join(tt.known, " ")+" ", " "+name+" ")
			if got := iss.Err() == nil; got != want {
				t.Errorf("%s: Compile(%s) ok = %v, want %v (%v)", name, tt.expr, got, want, iss.Err())
			}
		}
	}
}

// TestEnvsTypeTheParent checks that a parent type from its schema types `parent`, and
// `parents` in rollout.healthy: a field the schema lacks is a compile error.
func TestEnvsTypeTheParent(t *testing.T) {
	e, err := New(widgetType(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Types == nil {
		t.Fatal("Types = nil, want the provider of the parent's type")
	}
	rollout, err := e.Rollout()
	if err != nil {
		t.Fatal(err)
	}
	base, err := e.Base()
	if err != nil {
		t.Fatal(err)
	}
	parentOnly, err := e.ParentOnly()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     *cel.Env
		expr    string
		wantErr string
	}{
		{"field", base, `parent.spec.replicas + 1`, ""},
		{"missing field", base, `parent.spec.replica + 1`, "undefined field 'replica'"},
		{"wrong type", parentOnly, `parent.spec.replicas + "x"`, "found no matching overload"},
		{"rollout field", rollout, `parents.all(p, p.spec.replicas > 0)`, ""},
		{"rollout missing field", rollout, `parents.all(p, p.spec.replica > 0)`, "undefined field 'replica'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, iss := e.Compile(tt.env, tt.expr)
			switch {
			case tt.wantErr == "" && iss.Err() != nil:
				t.Errorf("Compile(%s) = %v, want no error", tt.expr, iss.Err())
			case tt.wantErr != "" && (iss.Err() == nil || !strings.Contains(iss.Err().Error(), tt.wantErr)):
				t.Errorf("Compile(%s) = %v, want an error containing %q", tt.expr, iss.Err(), tt.wantErr)
			}
		})
	}
}

// TestLibraryIsBuiltOnce checks that every rule extends the same library environment,
// and that it bounds what the parser accepts.
func TestLibraryIsBuiltOnce(t *testing.T) {
	a, err := Library()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Library()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("Library() built a second environment")
	}
	long := strings.Repeat("1 + ", parserSizeLimit/4) + "1"
	if _, iss := a.Compile(long); iss.Err() == nil {
		t.Errorf("Compile(%d characters) succeeded, want the parser's size limit", len(long))
	}
	deep := strings.Repeat("[", parserRecursionLimit+1) + strings.Repeat("]", parserRecursionLimit+1)
	if _, iss := a.Compile(deep); iss.Err() == nil {
		t.Errorf("Compile(%d nested lists) succeeded, want the parser's recursion limit", parserRecursionLimit+1)
	}
	for _, expr := range []string{`"a,b".split(",").size() == 2`, `sets.contains([1, 2], [1])`, `quantity("1Gi").isGreaterThan(quantity("1Mi"))`, `optional.of(1).hasValue()`} {
		if _, iss := a.Compile(expr); iss.Err() != nil {
			t.Errorf("Compile(%s) = %v, want the libraries to declare it", expr, iss.Err())
		}
	}
}

func TestIsDynamic(t *testing.T) {
	tests := []struct {
		t    *cel.Type
		want bool
	}{
		{cel.DynType, true},
		{cel.AnyType, true},
		{cel.TypeParamType("T"), true},
		{cel.IntType, false},
		{cel.ListType(cel.DynType), false},
		{cel.MapType(cel.StringType, cel.DynType), false},
	}
	for _, tt := range tests {
		if got := IsDynamic(tt.t); got != tt.want {
			t.Errorf("IsDynamic(%s) = %v, want %v", tt.t, got, tt.want)
		}
	}
}

// TestEnvsAreBuiltOnceEach checks that each environment is built on first use and then
// shared, and that Self stays a dynamically typed object when Parent is typed.
func TestEnvsAreBuiltOnceEach(t *testing.T) {
	e, err := New(widgetType(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, get := range map[string]func() (*cel.Env, error){"parentOnly": e.ParentOnly, "refs": e.Refs, "base": e.Base, "ready": e.Ready} {
		a, err := get()
		if err != nil {
			t.Fatal(err)
		}
		b, err := get()
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Errorf("%s: a second call built another environment", name)
		}
	}
	ready, err := e.Ready()
	if err != nil {
		t.Fatal(err)
	}
	if _, iss := e.Compile(ready, `self.status.anything == 1 && parent.spec.replicas > 0`); iss.Err() != nil {
		t.Errorf("Compile(readyWhen) = %v, want self dynamic and parent typed", iss.Err())
	}
	if _, iss := e.Compile(ready, `parent.spec.replica > 0`); iss.Err() == nil {
		t.Error("Compile(parent.spec.replica) in ready succeeded, want the parent's type to refuse it")
	}
}

// TestEnvsParseWithTheLibrarysMacros checks that expressions are parsed with the
// library's macros (Compile), which the environments do not copy.
func TestEnvsParseWithTheLibrarysMacros(t *testing.T) {
	e, err := New(widgetType(), nil)
	if err != nil {
		t.Fatal(err)
	}
	base, err := e.Base()
	if err != nil {
		t.Fatal(err)
	}
	for _, expr := range []string{`has(parent.spec.replicas)`, `[1, 2].all(x, x > 0)`, `[1].map(x, x + parent.spec.replicas).size() == 1`, `cel.bind(r, parent.spec.replicas, r > 0)`} {
		if _, iss := e.Compile(base, expr); iss.Err() != nil {
			t.Errorf("Compile(%s) = %v, want the library's macros expanded", expr, iss.Err())
		}
	}
	if _, iss := base.Compile(`[1, 2].all(x, x > 0)`); iss.Err() == nil {
		t.Error("the environment's own Compile expanded all(): it copied the library's macros")
	}
}
