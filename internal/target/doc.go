// Package target observes the objects desires target, for one leadership term: shared,
// metadata-only watches, one per resource (GVR) cluster-wide, whose stores keep a small Sighting
// per object (Watches, Watch); the drift of applied objects and the fight rules for a writer
// that keeps reverting a repair (DriftWatch, which tells the ApplyDesire reconciler what to do
// in a Decision); and kstatus readiness, from the sighting or at most one GET per new version
// (HealthCheck). The root package turns what it says into verdicts.
package target
