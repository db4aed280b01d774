#!/usr/bin/env bash
# Builds the real Karpenter controller with its KWOK cloud provider (the `kwok` main package of
# sigs.k8s.io/karpenter) as a Go module and caches it with the CRDs it serves (NodePool,
# NodeClaim, KWOKNodeClass, ...), copied from the same module. The local world runs it against
# its kube-apiserver (world/kube/karpenter.py), so nodemedic's NodeClaim operations are tested
# against the controller that really terminates and provisions NodeClaims. `make kube` runs it.
#
# Why the KWOK provider: it is Karpenter's own provider for clusters without a cloud; it
# "launches" a NodeClaim by creating its Node object, which the world's simulated kubelet then
# runs. Everything else (provisioning, termination finalizer, disruption) is Karpenter's code.
#
# One declared change to the module (build revision 2): karpenter-kwok-aws-provider-id.patch,
# applied to a copy of the module before the build, gives the provider's Nodes and NodeClaims
# the provider ID an EC2 instance's Node has, aws:///<zone>/i-<17 hex>, where upstream's is
# kwok://<node>. nodemedic finds a node's instance by that provider ID, so without it no
# fault on a Karpenter node of the world could be traced to its instance.
#
# The build is build-kube.sh's (sourced for its functions: Go lookup, module wrapper, cache
# layout, lock, atomic rename), with two differences: Karpenter's go.mod asks for a newer Go
# than the machines have, so GOTOOLCHAIN names the approved toolchain, which the go command
# fetches from the Go module proxy into the module cache (here only: the Kubernetes build keeps
# the machine's Go); and the controller has no --version flag, so the version checked is the
# one the build resolved.
#
# A cold build (module cache without Karpenter's modules, build cache without Go 1.27's
# packages) took 16 minutes wall and 7 CPU-minutes (user 348 s, system 71 s) on a 2-core
# machine other builds kept loaded (load average 10); warm, 15 seconds. Revision 2 over the
# caches revision 1 left: 17 to 20 seconds (the patched package recompiled, the binary linked).
#
# Usage: build-karpenter.sh [--venv DIR]   build (or say "cached")
#        build-karpenter.sh --print-dest   print the directory of the binary and CRDs; build nothing
set -Eeuo pipefail

# shellcheck source=world/kube/build-kube.sh
source "$(dirname "${BASH_SOURCE[0]}")/build-kube.sh"

# The newest Karpenter on the Go module proxy on 2026-11-29; its go.mod says `go 1.26.9`.
KARPENTER_VERSION=1.15.0
KARPENTER_MODULE=sigs.k8s.io/karpenter
# The toolchain the go command fetches for this build: the approved one newer than go.mod's.
KARPENTER_GOTOOLCHAIN=go1.27.3
BUILD_NAME=build-karpenter
BUILD_REVISION=2
BINARIES=(karpenter)
DEST="$CACHE/karpenter-$KARPENTER_VERSION-r$BUILD_REVISION"
# The CRD directories of the module: Karpenter's own API group and the KWOK node class.
CRD_DIRS=(pkg/apis/crds kwok/apis/crds)
KARPENTER_PATCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/karpenter-kwok-aws-provider-id.patch"

cached() {
    [[ -x $DEST/karpenter && -d $DEST/crds ]]
}

# As Karpenter's own release build (its Makefile's ko flags): the version into
# pkg/operator.Version, which the controller logs and reports as a metric label.
karpenter_ldflags() { printf '%s' "-s -w -X $KARPENTER_MODULE/pkg/operator.Version=v$KARPENTER_VERSION"; }

# The module copied out of the (read-only) module cache, the patch applied to the copy, and
# the build module pointed at it: only this build sees the patched source.
patch_module() {
    local module=$1 version=$2 src="$WORK/karpenter-src" json cached_dir
    json=$(go mod download -json "$module@v$version") || die "go mod download $module@v$version failed"
    cached_dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
    [[ -n $cached_dir && -d $cached_dir ]] || die "no module directory for $module in: $json"
    cp -R "$cached_dir" "$src"
    chmod -R u+w "$src"
    # git's apply, since git is on every machine that cloned this and patch(1) may not be;
    # the ceiling keeps it from taking a repository above the copy for its own.
    GIT_CEILING_DIRECTORIES="${src%/*}" git -C "$src" apply -p1 "$KARPENTER_PATCH" \
        || die "$KARPENTER_PATCH does not apply to $module v$version"
    go mod edit -replace "$module=../${src##*/}" # relative: the go.mod kept says what was built
}

build_all() {
    export GOTOOLCHAIN=$KARPENTER_GOTOOLCHAIN
    say "building Karpenter v$KARPENTER_VERSION (KWOK provider) with $GOTOOLCHAIN into $DEST"
    say "(a cold build takes about 16 minutes on a loaded 2-core machine; progress below)"
    local out=$1 upstream built_from
    build_command karpenter "$KARPENTER_MODULE" "$KARPENTER_VERSION" "$KARPENTER_MODULE/kwok" \
        karpenter_ldflags "$out" ""
    # The version the build resolved (a dependency could have raised it), and its files.
    built_from=$(go list -m -f '{{.Version}} {{.Dir}}' "$KARPENTER_MODULE") ||
        die "go list -m $KARPENTER_MODULE failed"
    upstream=${built_from#* }
    built_from=${built_from%% *}
    [[ $built_from == "v$KARPENTER_VERSION" ]] ||
        die "the build resolved $KARPENTER_MODULE $built_from, not v$KARPENTER_VERSION"
    mkdir -p "$out/crds"
    local dir
    for dir in "${CRD_DIRS[@]}"; do
        [[ -d $upstream/$dir ]] || die "no $dir in $upstream"
        cp "$upstream/$dir"/*.yaml "$out/crds/"
    done
    chmod -R u+w "$out/crds" # the module cache is read-only; the cache directory must be removable
    cp "$KARPENTER_PATCH" "$out/"
}

build_summary() {
    printf 'karpenter v%s (%s/kwok, the KWOK cloud provider, patched: %s) with %s\n' \
        "$KARPENTER_VERSION" "$KARPENTER_MODULE" "${KARPENTER_PATCH##*/}" "$KARPENTER_GOTOOLCHAIN"
    printf 'crds: %s\n' "$(cd "$OUT/crds" && echo *.yaml)"
}

main "$@"
