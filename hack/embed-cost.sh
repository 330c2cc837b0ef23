#!/usr/bin/env bash
# What embedding the library costs an operator: builds examples/controller-runtime as it is and
# a copy without the embedding (the lines between EMBED-BEGIN and EMBED-END and the imports
# marked "// EMBED" removed), then prints the embedding's line count and, for both builds, the
# module graph (`go list -m all` after `go mod tidy`: what `go mod download` fetches), the modules
# linked in (go version -m) and the binary's size, default build and -ldflags='-s -w'.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/examples/controller-runtime"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/with" "$work/without"
cp "$src/main.go" "$src/go.mod" "$src/go.sum" "$work/with/"
cp "$src/go.mod" "$src/go.sum" "$work/without/"
sed -i "s#=> ../..#=> $root#" "$work/with/go.mod" "$work/without/go.mod"
awk '$1 == "//" && $2 == "EMBED-BEGIN" && NF == 2 {skip=1; next} $1 == "//" && $2 == "EMBED-END" && NF == 2 {skip=0; next} !skip && !/\/\/ EMBED$/' \
	"$src/main.go" >"$work/without/main.go"

lines=$(awk '$1 == "//" && $2 == "EMBED-BEGIN" && NF == 2 {on=1; next} $1 == "//" && $2 == "EMBED-END" && NF == 2 {on=0} on' "$src/main.go" | wc -l)
echo "embedding: $lines lines between EMBED-BEGIN and EMBED-END (+ $(grep -c '// EMBED$' "$src/main.go") import lines)"
printf '%-8s %-7s %-7s %12s %14s\n' build graph linked "size (B)" "size -s -w (B)"
for v in without with; do
	(cd "$work/$v" && GOFLAGS=-mod=mod go mod tidy && go build -trimpath -o op . && go build -trimpath -ldflags='-s -w' -o op-stripped .)
	graph=$(cd "$work/$v" && go list -m all | wc -l)
	mods=$(go version -m "$work/$v/op" | awk '$1 == "dep"' | wc -l)
	printf '%-8s %-7s %-7s %12s %14s\n' "$v" "$graph" "$mods" "$(stat -c %s "$work/$v/op")" "$(stat -c %s "$work/$v/op-stripped")"
	go version -m "$work/$v/op" | awk '$1 == "dep" {print $2}' | sort >"$work/$v.mods"
done
echo "modules the library adds:"
comm -13 "$work/without.mods" "$work/with.mods" | sed 's/^/  /'
