//go:build !race

package rules

// raceEnabled reports whether the test binary was built with -race.
const raceEnabled = false
