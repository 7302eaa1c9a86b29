package check

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite ../metrics.txt")

// query is one PromQL expression and where it is.
type query struct{ where, expr string }

// TestExpressions parses every expression of the dashboard and the alerts, and compares
// the metrics they read with ../metrics.txt (-update rewrites it).
func TestExpressions(t *testing.T) {
	queries := append(dashboardQueries(t), alertQueries(t)...)
	if len(queries) < 20 {
		t.Fatalf("found only %d expressions", len(queries))
	}
	p := parser.NewParser(parser.Options{})
	used := map[string]bool{}
	for _, q := range queries {
		expr, err := p.ParseExpr(q.expr)
		if err != nil {
			t.Errorf("%s: %s: %v", q.where, q.expr, err)
			continue
		}
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok {
				used[vs.Name] = true
			}
			return nil
		})
	}
	names := make([]string, 0, len(used))
	for name := range used {
		names = append(names, name)
	}
	slices.Sort(names)
	want := "# The metrics that grafana-dashboard.json and prometheusrule.yaml read, as their\n" +
		"# expressions name them; written by `make monitoring-check`, checked by its test and by\n" +
		"# cmd/kubecel/testdata/script/cluster/monitoring.txtar against a running kubecel.\n" +
		strings.Join(names, "\n") + "\n"
	if *update {
		if err := os.WriteFile("../metrics.txt", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("../metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("../metrics.txt is stale (run make monitoring-check); want:\n%s", want)
	}
}

// grafanaVars are the dashboard's variables, and values that make its expressions
// PromQL.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$namespace", "kubecel-system", "$rule", ".*")

// labelValues is Grafana's label_values(SELECTOR, LABEL) of a variable's query.
var labelValues = regexp.MustCompile(`^label_values\((.*), *[a-z_]+\)$`)

func dashboardQueries(t *testing.T) []query {
	t.Helper()
	data, err := os.ReadFile("../grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name  string
				Type  string
				Query any
			}
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	var out []query
	for _, p := range dash.Panels {
		for i, target := range p.Targets {
			out = append(out, query{fmt.Sprintf("panel %q target %d", p.Title, i), grafanaVars.Replace(target.Expr)})
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		text, _ := q["query"].(string)
		m := labelValues.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(SELECTOR, LABEL)", v.Name, text)
			continue
		}
		out = append(out, query{"variable " + v.Name, grafanaVars.Replace(m[1])})
	}
	return out
}

func alertQueries(t *testing.T) []query {
	t.Helper()
	data, err := os.ReadFile("../prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	var out []query
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			out = append(out, query{"alert " + r.Alert, r.Expr})
		}
	}
	return out
}
