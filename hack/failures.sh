#!/usr/bin/env bash
# Repeats, after a test run, what failed: each failed test with its own messages, panics and
# timeouts. CI keeps only the end of a run's output, where later tests' klog lines would bury a
# failure's own. Reads `go test` output, with or without -v.
set -uo pipefail
log=${1:?usage: hack/failures.sh TEST-LOG}
awk '
function keep(name, line) { n = ++count[name]; msg[name, n] = line }
/^=== (RUN|CONT|NAME) / { cur = $3; after = ""; next }
/^[[:space:]]*--- FAIL: / { name = $3; if (!(name in failed)) order[++nf] = name; failed[name] = $0; after = name; next }
/^[[:space:]]*--- (PASS|SKIP): / { after = ""; next }
/^[[:space:]]+[A-Za-z0-9_]+_test\.go:[0-9]+: / { keep(after != "" ? after : cur, $0); next }
/^        / { if (after != "") keep(after, $0); next }
/^panic: |test timed out after|^FAIL[[:space:]]/ { other[++no] = $0; after = ""; next }
{ after = "" }
END {
	if (nf == 0 && no == 0) exit
	print "\n==== failures ===="
	for (i = 1; i <= nf; i++) {
		name = order[i]; print failed[name]
		from = count[name] > 30 ? count[name] - 29 : 1
		for (j = from; j <= count[name]; j++) print msg[name, j]
	}
	for (i = 1; i <= no; i++) print other[i]
}' "$log"
exit 0
