package docstest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubecel/kubecel/examples"
)

// figure is a number a document states in prose, and where it comes from.
type figure struct {
	doc    string
	at     *regexp.Regexp // its one group is the number in the document
	source string         // what it is, for the error
	value  func(t *testing.T, root string) string
}

// figures are the numbers in the documents' prose that restate what an example or a
// test holds.
var figures = []figure{
	{"README.md", regexp.MustCompile("`Loaded ([0-9]+) rules`"), "the rules of every example, which kubecel dev loads", exampleRules},
	{"docs/reliability.md", regexp.MustCompile(`on an audited API server and ([0-9]+) parents`), "shardParents in cmd/kubecel/shard_test.go",
		inSource("cmd/kubecel/shard_test.go", `const shardParents = ([0-9]+)`)},
	{"docs/reliability.md", regexp.MustCompile(`writing it for ([0-9]+) s more`), "outlast in internal/shard/member_test.go",
		inSource("internal/shard/member_test.go", `const outlast = ([0-9]+) \* time.Second`)},
}

// TestDocsFigures checks each figure against its source: the number in the document
// must be the one its source holds today.
func TestDocsFigures(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figures {
		data, err := os.ReadFile(filepath.Join(root, f.doc))
		if err != nil {
			t.Fatal(err)
		}
		m := f.at.FindSubmatch(data)
		if m == nil {
			t.Errorf("%s: no figure matches %q: say it as the test expects, or change the test", f.doc, f.at)
			continue
		}
		if want := f.value(t, root); string(m[1]) != want {
			t.Errorf("%s: %q says %s, %s holds %s", f.doc, m[0], m[1], f.source, want)
		}
	}
}

func exampleRules(t *testing.T, _ string) string {
	data, err := examples.Rules()
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Rules []any `json:"rules"`
	}
	if err := yaml.Unmarshal(data, &set); err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(len(set.Rules))
}

// inSource is the number that pattern's group matches in a file of the repository.
func inSource(file, pattern string) func(t *testing.T, root string) string {
	re := regexp.MustCompile(pattern)
	return func(t *testing.T, root string) string {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindSubmatch(data)
		if m == nil {
			t.Fatalf("%s: nothing matches %q", file, pattern)
		}
		return string(m[1])
	}
}
