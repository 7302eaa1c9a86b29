package testenv

import (
	"os"
	"strings"
	"testing"
)

// raceReport is how the race detector begins each report it prints.
const raceReport = "WARNING: DATA RACE"

// RaceEnv tells the race detector of a process to stop it at its first report (exit code
// 66), so that a race cannot go on unnoticed in a process a test later kills.
const RaceEnv = "GORACE=halt_on_error=1"

// ProcessEnv is the environment of a process a test starts from a binary built with
// BuildArgs (or of the test binary run as kubecel): the test's own, and RaceEnv.
func ProcessEnv() []string {
	return append(os.Environ(), RaceEnv)
}

// CheckRaces fails t when output, the output of a process the test started, holds a
// data race report: a process the test kills at its end never exits to fail on it, so
// every test that starts one scans what it printed. what names the process.
func CheckRaces(t testing.TB, what, output string) {
	t.Helper()
	i := strings.Index(output, raceReport)
	if i < 0 {
		return
	}
	report := output[i:]
	if end := strings.Index(report, "\n==================\n"); end > 0 {
		report = report[:end]
	}
	t.Errorf("%s reported a data race:\n%s", what, report)
}
