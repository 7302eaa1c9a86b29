package rules

import (
	"fmt"
	"strings"
	"testing"
)

// planted is a Secret value that no message may contain.
const planted = "s3cr3t-Pa55-7Hq"

// secretFailures are expressions that fail with an argument read from a Secret (or
// computed from one), over cel-go's and Kubernetes' error-producing functions, whose
// error texts quote their input.
var secretFailures = []string{
	`url(s.dsn).getHost()`,
	`url(s.token).getScheme()`,
	`ip(s.token).family()`,
	`cidr(s.token).prefixLength()`,
	`quantity(s.token).asInteger()`,
	`{"a": 1}[s.token]`,
	`{"a": 1}[s.token + "x"]`,
	`[1, 2][int(s.num)]`,
	`int(s.token)`,
	`uint(s.token)`,
	`double(s.token)`,
	`bool(s.token)`,
	`timestamp(s.token)`,
	`duration(s.token)`,
	`s.token.matches(s.token + "(")`,
	`"x".matches(s.token + "(")`,
	`s.token.split(",")[5]`,
	`s.dsn.substring(int(s.num))`,
	`isURL(s.dsn) ? 1 : int(s.token)`,
}

// sensitiveRules read the Secret ref creds (or, for the control, the ConfigMap ref
// plain) in a status field, a child's template and a child's expr.
const sensitiveRules = `- name: leak
  parent: {apiVersion: example.com/v1, resource: webapps}
  refs:
    - {id: creds, apiVersion: v1, kind: Secret, name: creds}
    - {id: plain, apiVersion: v1, kind: ConfigMap, name: plain}
    - {id: marked, apiVersion: v1, kind: ConfigMap, name: marked, sensitive: true}
  children:
    - id: cm
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: out}
        data:
          v: '${string(%[1]s)}'
  status:
    fields:
      v: '${string(%[1]s)}'
`

func secretObjects() Objects {
	data := map[string]any{"dsn": "postgres://admin:" + planted + "@db.internal:5432/app\x7f", "token": planted, "num": "99"}
	obj := func(kind, name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "team"}, "data": data}
	}
	return Objects{obj("Secret", "creds"), obj("ConfigMap", "plain"), obj("ConfigMap", "marked")}
}

// TestSecretValuesNeverInErrors evaluates each failing expression over the Secret ref
// and over a ref marked sensitive: the errors name the rule, child, field and
// expression, say that the message is withheld, and never hold the value. Over a plain
// ConfigMap the same expressions do quote it (TestSecretQuotedByCEL).
func TestSecretValuesNeverInErrors(t *testing.T) {
	parent := webApp(map[string]any{})
	parent["metadata"].(map[string]any)["namespace"] = "team"
	for _, expr := range secretFailures {
		for _, ref := range []string{"creds", "marked"} {
			t.Run(ref+"/"+expr, func(t *testing.T) {
				e := strings.ReplaceAll(expr, "s.", "refs."+ref+".data.")
				r := loadRule(t, fmt.Sprintf(sensitiveRules, e), Options{})
				_, err := r.EvaluateWithRefs(t.Context(), parent, Observed{}, secretObjects())
				if err == nil {
					t.Fatalf("%s did not fail", e)
				}
				msg := err.Error()
				if strings.Contains(msg, planted) || strings.Contains(msg, "admin:") {
					t.Errorf("the Secret value is in the error:\n%s", msg)
				}
				for _, want := range []string{`rule "leak"`, `child "cm"`, "withheld", "refs." + ref, e} {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q lacks %q", msg, want)
					}
				}
			})
		}
	}
}

// TestSecretQuotedByCEL shows what the redaction is for: over a plain ConfigMap, cel-go
// quotes the value in these errors.
func TestSecretQuotedByCEL(t *testing.T) {
	parent := webApp(map[string]any{})
	parent["metadata"].(map[string]any)["namespace"] = "team"
	quoted := 0
	for _, expr := range secretFailures {
		e := strings.ReplaceAll(expr, "s.", "refs.plain.data.")
		r := loadRule(t, fmt.Sprintf(sensitiveRules, e), Options{})
		_, err := r.EvaluateWithRefs(t.Context(), parent, Observed{}, secretObjects())
		if err != nil && strings.Contains(err.Error(), planted) {
			quoted++
		}
	}
	if quoted == 0 {
		t.Error("no expression's error quotes the value: the table no longer tests the redaction")
	}
	t.Logf("%d of %d errors quote the value over a ConfigMap", quoted, len(secretFailures))
}

// TestSensitiveMarks checks which children and programs load marks sensitive, and the
// flow warnings.
func TestSensitiveMarks(t *testing.T) {
	rs, err := Load(ruleFile(`- name: flows
  parent: {apiVersion: example.com/v1, resource: webapps}
  refs:
    - {id: creds, apiVersion: v1, kind: Secret, name: creds}
  children:
    - id: secret
      template:
        apiVersion: v1
        kind: Secret
        metadata: {name: copy}
        data: {p: "${refs.creds.data.p}"}
    - id: leaky
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: leaky}
        data: {p: "${refs.creds.data.p}"}
    - id: reader
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: reader}
        data: {value: "${string(children.secret.data.p)}"}
    - id: clean
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: clean}
    - id: keys
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: keys}
        data:
          names: '${refs.creds.?data.orValue({}).map(k, k).join(",")}'
          count: "${string(size(children.secret.data))}"
          member: "${string('p' in refs.creds.data)}"
          has: "${string(has(refs.creds.data.p))}"
    - id: values
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: values}
        data:
          all: '${refs.creds.data.map(k, refs.creds.data[k]).join(",")}'
  status:
    fields:
      p: "${refs.creds.data.p}"
      ok: "${parent.metadata.name}"
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rs.Rules[0]
	got := map[string]bool{}
	for _, ch := range r.Children {
		got[ch.ID] = ch.Sensitive
	}
	want := map[string]bool{"secret": true, "leaky": true, "reader": true, "clean": false, "keys": true, "values": true}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("child %q Sensitive = %v, want %v", id, got[id], w)
		}
	}
	if !r.Refs[0].Sensitive {
		t.Error("the Secret ref is not sensitive")
	}
	var warnings []string
	for _, w := range rs.Warnings {
		warnings = append(warnings, w.Error())
	}
	all := strings.Join(warnings, "\n")
	for _, want := range []string{`child "leaky"`, "the parent's status", "refs.creds", `child "reader"`, `child "values"`} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	// The keys of a Secret's data (which, how many) are not its values: kubectl
	// describe shows them (issue 40: the worker example's key names were warned about).
	for _, unwanted := range []string{`child "secret"`, `child "clean"`, "parent.metadata.name", `child "keys"`} {
		if strings.Contains(all, unwanted) {
			t.Errorf("warnings name %q:\n%s", unwanted, all)
		}
	}
}
