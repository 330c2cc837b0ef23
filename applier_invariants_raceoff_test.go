//go:build !race

package kubeapplier

// raceSlowdown scales the wall-clock windows the invariant world allows; 1 without the race
// detector (applier_invariants_raceon_test.go).
const raceSlowdown = 1
