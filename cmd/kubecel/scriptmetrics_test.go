package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cmdDelete deletes an object of $NS (in the background, as kubectl delete does).
func cmdDelete(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: delete RESOURCE NAME")
	}
	ts.Check(newScriptClient(ts).resource(ts, args[0]).Delete(context.Background(), args[1], metav1.DeleteOptions{}))
}

// cmdMetricsServed checks that every metric LIST names (one a line; # starts a comment)
// has a sample in SCRAPE, a Prometheus text exposition such as the body waithttp
// printed (stdout). It prints how many it checked.
func cmdMetricsServed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: metricsserved LIST SCRAPE")
	}
	served := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader([]byte(ts.ReadFile(args[1]))))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		served[name] = true
	}
	ts.Check(sc.Err())
	list, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var checked int
	var missing []string
	for line := range strings.Lines(string(list)) {
		name := strings.TrimSpace(line)
		if name == "" || strings.HasPrefix(name, "#") {
			continue
		}
		checked++
		if !served[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		ts.Fatalf("%s names metrics that %s does not have: %s", args[0], args[1], strings.Join(missing, ", "))
	}
	_, err = fmt.Fprintf(ts.Stdout(), "%d metrics served\n", checked)
	ts.Check(err)
}
