package celbudget

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"

	"github.com/kubecel/kubecel/rules/internal/celenv"
)

var errTestLimit = errors.New("test memory limit exceeded")

// testMemory refuses with errTestLimit, and gives a program run without a budget 1 KiB
// per call.
var testMemory = Memory{Exceeded: errTestLimit, Default: 1 << 10}

// testCostLimit is the Kubernetes apiserver's per-expression limit, rules' default.
const testCostLimit = 1_000_000

func TestBudgetCharge(t *testing.T) {
	tests := []struct {
		name      string
		limit     int64
		charges   []int64
		refused   int // index of the first refused charge; -1 for none
		wantRoom  int64
		wantLimit string
	}{
		{name: "fits", limit: 100, charges: []int64{40, 60}, refused: -1, wantRoom: 0},
		{name: "nothing and less are free", limit: 10, charges: []int64{0, -5, 10}, refused: -1, wantRoom: 0},
		{name: "one byte over", limit: 100, charges: []int64{40, 61}, refused: 1, wantRoom: 60, wantLimit: "100 bytes"},
		{name: "KiB", limit: 2 << 10, charges: []int64{3 << 10}, refused: 0, wantRoom: 2 << 10, wantLimit: "2 KiB"},
		{name: "MiB", limit: 16 << 20, charges: []int64{1 << 20, 16 << 20}, refused: 1, wantRoom: 15 << 20, wantLimit: "16 MiB"},
		{name: "not a whole KiB", limit: 1500, charges: []int64{1501}, refused: 0, wantRoom: 1500, wantLimit: "1500 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := testMemory.Budget(tt.limit)
			refused := -1
			var err error
			for i, n := range tt.charges {
				if err = b.Charge(n, "replace()"); err != nil {
					refused = i
					break
				}
			}
			if refused != tt.refused {
				t.Fatalf("first refused charge = %d, want %d (err %v)", refused, tt.refused, err)
			}
			if got := b.Room(); got != tt.wantRoom {
				t.Errorf("Room() = %d, want %d: a refused charge must charge nothing", got, tt.wantRoom)
			}
			if refused < 0 {
				return
			}
			if !errors.Is(err, errTestLimit) {
				t.Errorf("Charge() error = %v, want it to wrap Memory.Exceeded", err)
			}
			if !b.Refused(err) || !b.Refused(fmt.Errorf("field: %w", err)) {
				t.Errorf("Refused(%v) = false, want true for the refusal and what wraps it", err)
			}
			if b.Refused(errors.New(err.Error())) {
				t.Errorf("Refused() = true for another error with the same text")
			}
			want := errTestLimit.Error() + ": replace() would take what the expressions of this parent build past " + tt.wantLimit + ", the most one evaluation may build; build less from what the parent holds"
			if err.Error() != want {
				t.Errorf("Charge() error = %q, want %q", err, want)
			}
		})
	}
}

func TestBudgetRewind(t *testing.T) {
	b := testMemory.Budget(100)
	if err := b.Charge(30, "a list"); err != nil {
		t.Fatal(err)
	}
	mark := b.Mark()
	if err := b.Charge(50, "a list"); err != nil {
		t.Fatal(err)
	}
	b.refused = errTestLimit
	b.Rewind(mark)
	if got := b.Room(); got != 70 {
		t.Errorf("Room() after Rewind = %d, want 70", got)
	}
	if err := b.TakeRefused(); err != nil {
		t.Errorf("TakeRefused() after Rewind = %v, want nil", err)
	}
	var none *Budget
	if err := none.TakeRefused(); err != nil {
		t.Errorf("nil Budget's TakeRefused() = %v, want nil", err)
	}
}

// holder is the activation of an evaluation with a budget.
type holder struct {
	interpreter.Activation
	b *Budget
}

func (h holder) Budget() *Budget { return h.b }

// program compiles expr over `s` (a string) and `l` (a list), planned to charge.
func program(t *testing.T, expr string, costLimit uint64) cel.Program {
	t.Helper()
	lib, err := celenv.Library()
	if err != nil {
		t.Fatal(err)
	}
	env, err := lib.Extend(cel.Variable("s", cel.StringType), cel.Variable("l", cel.ListType(cel.StringType)))
	if err != nil {
		t.Fatal(err)
	}
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prg, err := env.Program(checked, testMemory.ProgramOptions(costLimit)...)
	if err != nil {
		t.Fatal(err)
	}
	return prg
}

// TestProgramsChargeBeforeBuilding evaluates calls that build far more than they read:
// with a budget of 1 KiB, each is refused before it builds, naming what it is, and
// within a budget large enough it runs and charges what it built.
func TestProgramsChargeBeforeBuilding(t *testing.T) {
	vars := map[string]any{"s": strings.Repeat("ab", 100), "l": []string{strings.Repeat("x", 200), "y", "z"}}
	tests := []struct {
		expr string
		what string
	}{
		{`s.replace("a", s)`, "replace()"},
		{`l.join(s + s)`, "join()"},
		{`s.split("").size()`, "split()"},
		{`"%s%s%s%s%s%s".format([s, s, s, s, s, s])`, "format()"},
		{`s + s + s + s + s + s`, "+"},
		{`l.map(x, x + x + x + x + x + x).size()`, "+"},
		{`lists.range(20).map(i, [i, i, i, i, i, i, i, i, i, i]).size()`, "a list"},
		{`s.findAll("a").size()`, "findAll()"},
		{`s.findAll(l[1] == "y" ? "b" : "a").size()`, "findAll()"},
		{`l.map(x, {x: x + x + x + x + x + x}).size()`, "+"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			prg := program(t, tt.expr, testCostLimit)
			act, err := interpreter.NewActivation(vars)
			if err != nil {
				t.Fatal(err)
			}
			small := testMemory.Budget(1 << 10)
			_, _, err = prg.Eval(holder{act, &small})
			if err == nil {
				t.Fatalf("Eval() with 1 KiB succeeded, want a refusal")
			}
			refused := small.TakeRefused()
			if !errors.Is(refused, errTestLimit) || !strings.Contains(refused.Error(), ": "+tt.what+" would take") {
				t.Errorf("TakeRefused() = %v, want a refusal of %s", refused, tt.what)
			}
			large := testMemory.Budget(1 << 20)
			if _, _, err := prg.Eval(holder{act, &large}); err != nil {
				t.Fatalf("Eval() with 1 MiB = %v, want a result", err)
			}
			if large.Room() == 1<<20 {
				t.Errorf("Eval() with 1 MiB charged nothing")
			}
		})
	}
}

// TestChargesWithoutAnEvaluation runs a program without a Holder: each call is checked
// against a budget of Memory.Default, and a refusal is the expression's error.
func TestChargesWithoutAnEvaluation(t *testing.T) {
	vars := map[string]any{"s": strings.Repeat("ab", 300), "l": []string{}}
	prg := program(t, `s.replace("a", "xy").size()`, testCostLimit)
	if _, _, err := prg.Eval(vars); err != nil {
		t.Errorf("Eval(900 bytes built) = %v, want a result within 1 KiB", err)
	}
	prg = program(t, `s.replace("a", s).size()`, testCostLimit)
	_, _, err := prg.Eval(vars)
	if err == nil || !strings.Contains(err.Error(), errTestLimit.Error()+": replace() would take") {
		t.Errorf("Eval() = %v, want the refusal of replace() past Memory.Default", err)
	}
}

// TestQuadraticWorkStopsBeforeItStarts: a call whose work alone is over the cost limit
// stops the expression as CEL's cost limit does, whatever the budget.
func TestQuadraticWorkStopsBeforeItStarts(t *testing.T) {
	many := make([]string, 2000)
	for i := range many {
		many[i] = strings.Repeat("x", i%7)
	}
	act, err := interpreter.NewActivation(map[string]any{"s": strings.Repeat("a", 20_000), "l": many})
	if err != nil {
		t.Fatal(err)
	}
	for _, expr := range []string{`l.distinct().size()`, `sets.contains(l, l)`, `s.indexOf(s.substring(1))`} {
		t.Run(expr, func(t *testing.T) {
			b := testMemory.Budget(1 << 30)
			_, _, err := program(t, expr, 1000).Eval(holder{act, &b})
			if err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
				t.Errorf("Eval() = %v, want the cost limit", err)
			}
			if err := b.TakeRefused(); err != nil {
				t.Errorf("TakeRefused() = %v, want nil: the work, not memory, stopped it", err)
			}
		})
	}
}
