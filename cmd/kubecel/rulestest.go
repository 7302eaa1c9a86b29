package main

import (
	"github.com/spf13/cobra"

	"github.com/kubecel/kubecel/internal/cli/rulestest"
)

func newTestCommand() *cobra.Command {
	var o rulestest.Options
	cmd := &cobra.Command{
		Use:   "test [PATH]... [--run REGEXP] [--verbose] [--update]",
		Short: "Run the tests of rules files (test files *_test.yaml), offline",
		Long: `test runs rules tests without a cluster. A test file (kind: RuleTest) names its rules
and holds tests: each gives a parent, the objects observed in the cluster (children as
they exist, objects that refs read) and what the rules must compute: the children, the
status, readiness and CEL assertions, or the error the evaluation must fail with. Each
test renders its parent as kubecel render does and compares.

A PATH that is a file is a test file, whatever its name; a directory stands for every
file named *_test.yaml below it (directories starting with . are skipped). Without a
PATH, the current directory.

For each failing test, test prints --- FAIL: FILE/NAME and each difference: a diff of a
child or of the status (-want +got), a missing or unexpected child, a false assertion
with the value of each side of a comparison. Then one line per file: ok or FAIL, and a
last line FAIL when a test failed. --verbose lists the tests that pass; --run runs only
the tests whose name matches the regular expression. --update writes the children and
status the rules compute into the expect blocks of the tests that run, or the files
their expect.children name (readiness and assertions are still checked), keeping the
comments of the test file; the file is written again by a YAML encoder, which may change
its indentation and quoting.

Exit status 0 when every test passes; 1 when a test fails, when a test file, its rules
or the objects it names do not load, or when no test file is found.`,
		Example: `  # every test file (*_test.yaml) under a directory
  kubecel test examples/

  # the tests of one file whose name matches, each listed
  kubecel test examples/webapp/webapp_test.yaml --run shop --verbose

  # write what the rules compute into the tests' expectations
  kubecel test examples/webapp/webapp_test.yaml --update`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return rulestest.Run(cmd.Context(), &o, args, streamsOf(cmd))
		},
	}
	cmd.Flags().StringVar(&o.Match, "run", "", "run only the tests whose name matches this regular expression")
	cmd.Flags().BoolVar(&o.Verbose, "verbose", false, "list every test that runs, passed or failed")
	cmd.Flags().BoolVar(&o.Update, "update", false, "rewrite the expected children and status of the tests that run with what the rules compute")
	return cmd
}
