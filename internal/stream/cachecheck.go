package stream

import "github.com/kube-applier-aws/kubeapplier/api"

// cacheCheck tells when the informer's cache holds what a watch delivered and what its List
// returned: the reflector hands events to the informer, which updates its cache a moment
// later, so a round that found nothing new vouches for the cache (the heartbeat's watermark
// counts on it) only once the cache caught up. Shared by the stream watch and the index-poll
// watch. The zero value has confirmed nothing, the List included.
type cacheCheck struct {
	// unconfirmed are the desires delivered since the cache was last seen to hold what was
	// delivered (every desire of the List too until listConfirmed).
	unconfirmed   map[string]struct{}
	listConfirmed bool
}

// delivered notes that the watch delivered a state of desire id.
func (c *cacheCheck) delivered(id string) {
	if c.unconfirmed == nil {
		c.unconfirmed = map[string]struct{}{}
	}
	c.unconfirmed[id] = struct{}{}
}

// cached reports whether stored (the informer's cache; nil: no cache to ask, true) holds the
// state book says was delivered or listed of each desire not yet confirmed: a desire the
// book no longer knows or holds as deleted must be absent, any other present at its
// incarnation and version.
func (c *cacheCheck) cached(book *desireBook, stored func(id string) (api.Desire, bool)) bool {
	if stored == nil {
		return true
	}
	check := func(id string) bool {
		want, known := book.known[id] // a freed entry was a deletion
		got, ok := stored(id)
		if !known || want.deleted {
			return !ok
		}
		return ok && got.Meta().CreateTime.Equal(want.created) && got.Meta().Version == want.version
	}
	if !c.listConfirmed {
		for id := range book.known {
			if !check(id) {
				return false
			}
		}
		c.listConfirmed = true
	}
	for id := range c.unconfirmed {
		if !check(id) {
			return false
		}
		delete(c.unconfirmed, id)
	}
	return true
}
