package getrules

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubecel/kubecel/internal/cli/clikit"
	"github.com/kubecel/kubecel/internal/cli/revisions"
)

// print writes the rules in the format of -o; with no rule, it says so on stderr, as
// kubectl get does.
func (o *Options) print(out, stderr io.Writer, list *ruleList) error {
	switch o.Output {
	case "json", "yaml":
		return clikit.PrintData(out, o.Output, list)
	}
	if len(list.Rules) == 0 {
		_, err := fmt.Fprintf(stderr, "No rules found for installation %q in namespace %s.\n", list.Installation, list.Namespace)
		return err
	}
	return writeRuleTable(out, list.Rules, o.Output == "wide", time.Now())
}

// writeRuleTable prints one row per rule; wide adds UP-TO-DATE, RESOURCE, FROM, AGE and
// MESSAGE.
func writeRuleTable(w io.Writer, rows []ruleRow, wide bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	head := "NAME\tREVISION\tHASH\tPHASE\tSTEP\tPARENTS\tREADY\tSYNCED\tFAILING"
	if wide {
		head += "\tUP-TO-DATE\tRESOURCE\tFROM\tAGE\tMESSAGE"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		step := "-"
		if r.Step > 0 {
			step = fmt.Sprintf("%d/%d", r.Step, len(r.Steps))
		}
		cols := []string{r.Name, strconv.FormatInt(r.Revision, 10), r.Hash, string(r.Phase), step}
		counts := []string{"-", "-", "-", "-"}
		upToDate := "-"
		if p := r.Parents; p != nil {
			counts = []string{strconv.Itoa(p.Total), "-", "-", "-"}
			if r.WritesStatus {
				counts = []string{strconv.Itoa(p.Total), strconv.Itoa(p.Ready), strconv.Itoa(p.Synced), strconv.Itoa(p.Failing)}
				upToDate = strconv.Itoa(p.UpToDate)
			}
		}
		cols = append(cols, counts...)
		if wide {
			from, age, msg := "-", "-", "-"
			if r.From != nil {
				from = r.From.Hash
				if r.From.Revision > 0 {
					from = fmt.Sprintf("%d (%s)", r.From.Revision, r.From.Hash)
				}
			}
			if !r.Created.IsZero() {
				age = duration.HumanDuration(now.Sub(r.Created))
			}
			if r.Message != "" {
				// A message of several lines would break the table.
				msg = strings.Join(strings.Fields(r.Message), " ")
			}
			resource := clikit.Dash(r.ParentResource)
			if gvr, err := revisions.ParseParentResource(r.ParentResource); err == nil {
				resource = gvr.GroupResource().String()
			}
			cols = append(cols, upToDate, resource, from, age, msg)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	return tw.Flush()
}
