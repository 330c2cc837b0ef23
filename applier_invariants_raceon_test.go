//go:build race

package kubeapplier

// raceSlowdown scales the wall-clock windows the invariant world allows (applier_invariants_test.go)
// when the tests run under the race detector, which slows a program 2-20x (the Go race
// detector's documentation): a deleted status noticed within a resync period, or a world
// converging within seconds, takes that much longer, though what is checked is the same.
const raceSlowdown = 5
