#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and etcd from the Go module proxy, once, into a
# versioned cache folder. setup-envtest's downloads are not reachable here, so the binaries come
# from source. Each binary is built only when missing.
# Cost on 2 cores: ~12-17 min cold for kube-apiserver + etcd; kube-controller-manager alone
# ~9 min and ~2.6 GB peak RSS (less right after kube-apiserver: they share the build cache of
# this run); 0 s when the binaries are cached.
# kube-controller-manager is not part of the stack: only the tests that need a garbage
# collector start it (internal/testenv.StartControllerManager).
# Prints the folder holding the binaries (usable as KUBEBUILDER_ASSETS).
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
CACHE_ROOT=${KAA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-applier-aws}
OUT="$CACHE_ROOT/kube/kube-apiserver-$KUBE_VERSION-etcd-$ETCD_VERSION"

log() { echo "build-kube: $*" >&2; }

if [[ -x "$OUT/kube-apiserver" && -x "$OUT/kube-controller-manager" && -x "$OUT/etcd" ]]; then
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

# kube_build NAME: builds k8s.io/kubernetes/cmd/NAME into $OUT/NAME, in one module that imports
# both commands (set up once per run, so kube-controller-manager reuses kube-apiserver's build
# cache).
kube_module=
kube_build() {
  local name=$1
  if [[ -z $kube_module ]]; then
    kube_module="$work/kube"
    mkdir -p "$kube_module"
    (
      cd "$kube_module"
      go mod init local/kube >/dev/null 2>&1
      # k8s.io/kubernetes lists its staging modules at v0.0.0: replace each with the matching v0.x tag.
      gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
      staging=${KUBE_VERSION/v1./v0.}
      echo "require k8s.io/kubernetes $KUBE_VERSION" >>go.mod
      grep -E '^\s+k8s\.io/[a-z0-9-]+ v0\.0\.0\s*$' "$gomod" | awk '{print $1}' | sort -u | while read -r m; do
        echo "replace $m => $m $staging" >>go.mod
      done
      cat >tools.go <<'GO'
package main

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {}
GO
      go mod tidy >/dev/null 2>&1 || go mod tidy
    )
  fi
  local major minor ld
  major=${KUBE_VERSION#v}; major=${major%%.*}
  minor=${KUBE_VERSION#v*.}; minor=${minor%%.*}
  ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"
  ld+=" -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"
  ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION"
  (cd "$kube_module" && go build -trimpath -ldflags "$ld" -o "$OUT/$name.tmp" "k8s.io/kubernetes/cmd/$name")
  mv "$OUT/$name.tmp" "$OUT/$name"
}

if [[ ! -x "$OUT/kube-apiserver" ]]; then
  log "building kube-apiserver $KUBE_VERSION (~12-16 min on 2 cores, once)"
  kube_build kube-apiserver
fi
if [[ ! -x "$OUT/kube-controller-manager" ]]; then
  # Only the garbage-collector tests run it (integration_propagation_test.go).
  log "building kube-controller-manager $KUBE_VERSION (~9 min and ~2.6 GB of memory on 2 cores, once)"
  kube_build kube-controller-manager
fi
log "binaries ready in $OUT"
echo "$OUT"
