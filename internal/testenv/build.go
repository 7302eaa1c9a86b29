package testenv

// BuildArgs returns the arguments of `go build` (after "go") that build the package pkg
// into the file out the way the running test binary was built: with -race when the tests
// run with the race detector, so that a process the tests start (kubecel run, kubecel
// dev) is checked for data races too: run it with ProcessEnv and scan its output with
// CheckRaces.
func BuildArgs(out, pkg string) []string {
	args := []string{"build"}
	if RaceEnabled {
		args = append(args, "-race")
	}
	return append(args, "-o", out, pkg)
}
