package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// writeDesires writes one desire of tables' kind per target, made by build from the target's
// desire ID, and returns what to wait for. Apply and delete are symmetric: before a target's
// desire is written, the opposite desire of the same object (same ID, other table) is removed,
// so the object is not applied and deleted in turn forever; removing it first keeps the
// applier from carrying it out once more after the new desire.
func writeDesires[T api.Desire](ctx context.Context, a *app, tables kindTables[T], opposite desireTables,
	ds desireSettings, targets []target, build func(id string, t target) (T, error)) ([]*waitItem, error) {
	var waits []*waitItem
	for _, t := range targets {
		id := ds.id(t)
		d, err := build(id, t)
		if err != nil {
			return nil, err
		}
		// Read first: a conditional delete that finds nothing is still a write, billed as
		// one, and an unchanged desire writes nothing.
		_, removed, err := opposite.getSpec(ctx, id)
		if errors.Is(err, api.ErrInvalidItem) {
			removed, err = true, nil // an undecodable one is removed all the same (how a broken desire is cleared)
		}
		if err == nil && removed {
			removed, err = opposite.deleteSpec(ctx, id)
		}
		if err != nil {
			// The command is about tables.kind: name it first (the opposite is a step of it).
			return nil, fmt.Errorf("%s (%s): removing %s of the same object first: %w",
				desireRef(tables.kind, id), t.label, desireRef(opposite.desireKind(), id), err)
		}
		if removed {
			ref := desireRef(opposite.desireKind(), id)
			a.line(outputRecord{Event: "deleted", Desire: ref, Object: t.label}, fmt.Sprintf("%s deleted (%s)", ref, t.label))
		}
		// With its rival just removed, the desire is written again even when unchanged: a new
		// version gets a verdict of its own, not the TargetConflict its status may still say.
		stored, done, err := put(ctx, tables, d, removed)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", desireRef(tables.kind, id), t.label, err)
		}
		a.printWritten(tables.kind, id, t.label, done)
		waits = append(waits, newWaitItem(tables, stored, t.label))
	}
	return waits, nil
}

// printWritten prints kubectl's line for a desire written (created, configured) or found
// as it would be written (unchanged).
func (a *app) printWritten(kind api.DesireKind, id, label string, done putResult) {
	verb := string(done)
	ref := desireRef(kind, id)
	a.line(outputRecord{Event: verb, Desire: ref, Object: label}, fmt.Sprintf("%s %s (%s)", ref, verb, label))
}
