#!/usr/bin/env bash
# Fetches Amazon's DynamoDB Local (with Streams) once into a versioned cache folder and prints
# the folder to run it from. It ships inside the npm package amplify-dynamodb-simulator; only the
# tarball is fetched (`npm install` would drag in ~280 packages) and only package/emulator/ is
# unpacked. Both the tarball and the jar are pinned by hash, so a changed upload is refused.
set -euo pipefail

VERSION=2.9.30
INTEGRITY=sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ==
JAR_SHA256=454305e9bc3e6ebcca5b62569869e31563b8d7e346474e94557b2600702146c7
CACHE_ROOT=${KAA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-applier-aws}
OUT="$CACHE_ROOT/dynamodb-local/$VERSION"
EMU="$OUT/emulator"

log() { echo "dynamodb-local: $*" >&2; }

jar_ok() { [[ -f "$EMU/DynamoDBLocal.jar" ]] && echo "$JAR_SHA256  $EMU/DynamoDBLocal.jar" | sha256sum -c --status; }

if jar_ok; then
  echo "$EMU"
  exit 0
fi

mkdir -p "$OUT"
work=$(mktemp -d "$OUT/.fetch.XXXXXX") # same filesystem as $EMU, so the final mv is atomic
trap 'rm -rf "$work"' EXIT

log "fetching amplify-dynamodb-simulator@$VERSION (~57 MB)"
tgz=$(cd "$work" && npm pack --silent "amplify-dynamodb-simulator@$VERSION" | tail -n 1)
got="sha512-$(openssl dgst -sha512 -binary "$work/$tgz" | base64 -w0)"
if [[ "$got" != "$INTEGRITY" ]]; then
  log "integrity mismatch: got $got, want $INTEGRITY"
  exit 1
fi

mkdir -p "$work/x"
tar -xzf "$work/$tgz" -C "$work/x" --strip-components=1 package/emulator
echo "$JAR_SHA256  $work/x/emulator/DynamoDBLocal.jar" | sha256sum -c --status ||
  { log "DynamoDBLocal.jar sha256 mismatch"; exit 1; }

rm -rf "$EMU"
mv "$work/x/emulator" "$EMU"
log "ready in $EMU"
echo "$EMU"
