//go:build race

package browsertest

// raceEnabled: this binary is built with -race, under which New skips its test.
const raceEnabled = true
