#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the Go module proxy, once, into a versioned cache folder.
# setup-envtest's downloads are not reachable here, so the binaries come from source.
# Cost on 2 cores: ~12-17 min cold (kube-apiserver dominates); 0 s when the binaries are cached.
# Prints the folder holding both binaries (usable as KUBEBUILDER_ASSETS).
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
CACHE_ROOT=${KAA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-applier-aws}
OUT="$CACHE_ROOT/kube/kube-apiserver-$KUBE_VERSION-etcd-$ETCD_VERSION"

log() { echo "build-kube: $*" >&2; }

if [[ -x "$OUT/kube-apiserver" && -x "$OUT/etcd" ]]; then
  echo "$OUT"
  exit 0
fi
mkdir -p "$OUT"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The build cache of this build is useless to the project's own tests (other flags): keep it out.
export GOCACHE="$work/gocache" GOFLAGS=-mod=mod CGO_ENABLED=0

if [[ ! -x "$OUT/etcd" ]]; then
  log "building etcd $ETCD_VERSION (~1-2 min)"
  mkdir -p "$work/etcd"
  cat >"$work/etcd/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$work/etcd" && go mod init local/etcd >/dev/null 2>&1 &&
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1 &&
    go mod tidy >/dev/null 2>&1 &&
    go build -trimpath -o "$OUT/etcd.tmp" . && mv "$OUT/etcd.tmp" "$OUT/etcd")
fi

if [[ ! -x "$OUT/kube-apiserver" ]]; then
  log "building kube-apiserver $KUBE_VERSION (~12-16 min on 2 cores, once)"
  mkdir -p "$work/kas"
  cd "$work/kas"
  go mod init local/kas >/dev/null 2>&1
  # k8s.io/kubernetes lists its staging modules at v0.0.0: replace each with the matching v0.x tag.
  gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  staging=${KUBE_VERSION/v1./v0.}
  echo "require k8s.io/kubernetes $KUBE_VERSION" >>go.mod
  grep -E '^\s+k8s\.io/[a-z0-9-]+ v0\.0\.0\s*$' "$gomod" | awk '{print $1}' | sort -u | while read -r m; do
    echo "replace $m => $m $staging" >>go.mod
  done
  cat >tools.go <<'GO'
package main

import _ "k8s.io/kubernetes/cmd/kube-apiserver/app"

func main() {}
GO
  go mod tidy >/dev/null 2>&1 || go mod tidy
  major=${KUBE_VERSION#v}; major=${major%%.*}
  minor=${KUBE_VERSION#v*.}; minor=${minor%%.*}
  ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"
  ld+=" -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"
  ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
  go build -trimpath -ldflags "$ld" -o "$OUT/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
fi
log "binaries ready in $OUT"
echo "$OUT"
