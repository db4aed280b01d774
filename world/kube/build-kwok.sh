#!/usr/bin/env bash
# Builds the KWOK controller (the `kwok` command of sigs.k8s.io/kwok) as a Go module and caches
# it beside the Kubernetes binaries. The scale world runs it against its kube-apiserver
# (world/kube/kwok.py): it plays the kubelets of 1,500 Nodes and their pods, where the world's
# own simulated kubelets (world/kube/kubelet.py) are one Python process per node. `make kube`
# runs it.
#
# The build is build-kube.sh's (sourced for its functions: Go lookup, module wrapper, cache
# layout, lock, atomic rename, build_command). KWOK's go.mod says `go 1.26.0`, so the machine's
# own Go builds it (no GOTOOLCHAIN download, unlike build-karpenter.sh).
#
# A cold build (module cache without KWOK's modules; build cache holding the Kubernetes
# build's packages) took 11 minutes wall and 4 CPU-minutes (user 186 s, system 43 s) on a
# 2-core machine another build kept at load average 13.
#
# Usage: build-kwok.sh [--venv DIR]   build (or say "cached")
#        build-kwok.sh --print-dest   print the directory of the binary; build nothing
set -Eeuo pipefail

# shellcheck source=world/kube/build-kube.sh
source "$(dirname "${BASH_SOURCE[0]}")/build-kube.sh"

# The newest KWOK on the Go module proxy on 2026-11-29; its go.mod says `go 1.26.0`.
KWOK_VERSION=0.8.0
KWOK_MODULE=sigs.k8s.io/kwok
BUILD_NAME=build-kwok
BUILD_REVISION=2
BINARIES=(kwok)
DEST="$CACHE/kwok-$KWOK_VERSION-r$BUILD_REVISION"
# KWOK runs nothing without stages: its `fast` ones (a Node Ready at once, a bound pod Running
# at once, a deleted pod gone), copied from the same module into stages/, one file each, which
# world/kube/kwok.py passes as --config.
STAGE_DIRS=(kustomize/stage/node/fast kustomize/stage/pod/fast)

cached() {
    [[ -x $DEST/kwok && -d $DEST/stages ]]
}

# As KWOK's release build (hack/releases.sh): the version into pkg/consts, which `--version`
# prints; the Kubernetes version it reports for its nodes is the one the world runs.
kwok_ldflags() {
    printf '%s' "-s -w -X $KWOK_MODULE/pkg/consts.Version=v$KWOK_VERSION -X $KWOK_MODULE/pkg/consts.KubeVersion=v$KUBE_VERSION"
}

build_all() {
    say "building KWOK v$KWOK_VERSION with $(go version) into $DEST"
    local out=$1 upstream dir
    build_command kwok "$KWOK_MODULE" "$KWOK_VERSION" "$KWOK_MODULE/cmd/kwok" kwok_ldflags "$out" \
        "v$KWOK_VERSION" --version
    upstream=$(go list -m -f '{{.Dir}}' "$KWOK_MODULE") || die "go list -m $KWOK_MODULE failed"
    mkdir -p "$out/stages"
    for dir in "${STAGE_DIRS[@]}"; do
        [[ -d $upstream/$dir ]] || die "no $dir in $upstream"
        find "$upstream/$dir" -maxdepth 1 -name '*.yaml' ! -name kustomization.yaml \
            -exec cp {} "$out/stages/" \;
    done
    chmod -R u+w "$out/stages" # the module cache is read-only; the cache directory must be removable
}

build_summary() {
    printf 'kwok v%s (%s/cmd/kwok)\n' "$KWOK_VERSION" "$KWOK_MODULE"
    printf 'stages: %s\n' "$(cd "$OUT/stages" && echo *.yaml)"
}

main "$@"
