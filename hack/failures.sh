#!/usr/bin/env bash
# Repeats, after a test run, what failed: each failed test with its own messages, panics and
# timeouts, and each data race the race detector reported, cut to its accesses, goroutines and
# the project's own frames. CI keeps only the end of a run's output, where later tests' klog
# lines would bury a failure's own. Reads `go test` output, with or without -v.
set -uo pipefail
log=${1:?usage: hack/failures.sh TEST-LOG}
awk '
function keep(name, line) { n = ++count[name]; msg[name, n] = line }
# A race report runs from "WARNING: DATA RACE" to the next line of "="; it is kept whole in the
# log above, here only its headers and the frames of this module (function and file:line).
/^WARNING: DATA RACE/ { inrace = 1; nr++; race[nr, ++rl[nr]] = $0 (cur != "" ? " (during " cur ")" : ""); own = 0; next }
inrace && /^==================$/ { inrace = 0; next }
inrace {
	if ($0 ~ /^[A-Z]/) { race[nr, ++rl[nr]] = $0; own = 0 }
	else if ($0 ~ /^  [^ ].*kube-applier-aws\/kubeapplier/) { race[nr, ++rl[nr]] = $0; own = 1 }
	else if (own && $0 ~ /^      /) { race[nr, ++rl[nr]] = $0; own = 0 }
	else own = 0
	next
}
/^=== (RUN|CONT|NAME) / { cur = $3; after = ""; next }
/^[[:space:]]*--- FAIL: / { name = $3; if (!(name in failed)) order[++nf] = name; failed[name] = $0; after = name; next }
/^[[:space:]]*--- (PASS|SKIP): / { after = ""; next }
/^[[:space:]]+([A-Za-z0-9_]+_test|testing)\.go:[0-9]+: / { keep(after != "" ? after : cur, $0); next }
/^        / { if (after != "") keep(after, $0); next }
/^panic: |test timed out after|^FAIL[[:space:]]/ { other[++no] = $0; after = ""; next }
{ after = "" }
END {
	if (nf == 0 && no == 0 && nr == 0) exit
	print "\n==== failures ===="
	for (i = 1; i <= nf; i++) {
		name = order[i]; print failed[name]
		from = count[name] > 30 ? count[name] - 29 : 1
		for (j = from; j <= count[name]; j++) print msg[name, j]
	}
	# The first five races, 60 lines each at most: one fix often ends the others.
	for (i = 1; i <= nr && i <= 5; i++) {
		print ""
		for (j = 1; j <= rl[i] && j <= 60; j++) print race[i, j]
	}
	if (nr > 5) print "\n(" nr - 5 " more data races above)"
	for (i = 1; i <= no; i++) print other[i]
}' "$log"
exit 0
