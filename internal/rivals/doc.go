// Package rivals holds the rules for desires of one management cluster that target the same
// object, over the desire informers' indexes:
//
//   - Two ApplyDesires with different documentIDs would share one field manager and silently
//     undo each other while both say Successful. The one created first (the spec's createTime;
//     then the smaller documentID) keeps the object; every other one is refused.
//   - An ApplyDesire and a DeleteDesire of one object would fight for ever: one re-creates what
//     the other deletes. The DeleteDesire wins while it exists. A deletion is the more recent
//     intent in every workflow that writes one beside an ApplyDesire (the backend tears down),
//     and a rule that keyed on the order of writes could flip with a clock or a replay.
//
// The informers' caches lag (a rival removed a moment ago, on another table's stream, is still
// cached), so a rival is confirmed by a consistent read of its specs table before a desire is
// refused for it. Rules.Check says what the rules decide in an Outcome; the root package turns
// it into a verdict. Apply and Delete desires are indexed by their object's family (group,
// namespace, name: familyIndex), so the cache keeps one index entry per desire.
package rivals
