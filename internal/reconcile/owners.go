package reconcile

import (
	"fmt"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// Rival desires of different owners (`spec.owner`, docs/contract.md): the rules that decide
// which desire keeps an object do not change with the owner (the first created keeps it, a
// DeleteDesire wins), but a refusal for a desire another owner wrote is a conflict between
// writers who may not know of each other. Its message names the rival's owner beside its
// documentID, and kube_applier_owner_conflicts counts the desires refused so.

// otherOwner reports whether a rival's owner differs from the desire's, both named: an
// unnamed owner conflicts with nobody (today's rules and messages).
func otherOwner(mine, rival string) bool {
	return mine != "" && rival != "" && mine != rival
}

// ownerNote is what a message adds after a rival's documentID when its owner is another one
// than mine: `, owner "b", not this desire's owner "a"`; "" otherwise.
func ownerNote(mine, rival string) string {
	if !otherOwner(mine, rival) {
		return ""
	}
	return fmt.Sprintf(", owner %q, not this desire's owner %q", rival, mine)
}

// ownerConflicts are the ApplyDesires (by documentID) the last rival check refused for a
// rival of another owner, in this term.
type ownerConflicts struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// set records whether desire id is now refused for a rival of another owner.
func (o *ownerConflicts) set(id string, conflict bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !conflict {
		delete(o.ids, id)
		return
	}
	if o.ids == nil {
		o.ids = map[string]struct{}{}
	}
	o.ids[id] = struct{}{}
}

// reset forgets every desire (a new term judges afresh).
func (o *ownerConflicts) reset() {
	o.mu.Lock()
	o.ids = nil
	o.mu.Unlock()
}

// count returns how many recorded desires applies (the term's ApplyDesire cache, keyed by
// documentID; nil: all) still holds; the others (deleted since their last check, which no
// check will look at again) are dropped.
func (o *ownerConflicts) count(applies cache.Indexer) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if applies != nil {
		for id := range o.ids {
			if _, exists, err := applies.GetByKey(id); err == nil && !exists {
				delete(o.ids, id)
			}
		}
	}
	return len(o.ids)
}
