#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager v1.20.2 from Debian's `kubernetes`
# source package and caches them, because no package registry ships these binaries and
# the tests and the local mode need a real API server, not a fake of it.
#
# Idempotent: when the cached binaries and etcd exist it only says so. Safe on a fresh
# Debian machine: it adds a deb-src entry derived from the machine's own Debian source
# list and installs the toolchain with apt-get. Any failure stops the script with a message.
# `build-kube.sh --print-dest` prints the cache directory of the binaries and builds nothing.
set -Eeuo pipefail

KUBE_VERSION=1.20.2
DEB_VERSION=1.20.5+really1.20.2-1.1+deb12u1
# Kubernetes 1.20 vendors github.com/modern-go/reflect2 v1.0.1, whose map iteration calls
# the runtime's mapiterinit with its pre-Go-1.18 signature: built with Go 1.19, the
# apiserver dies (SIGSEGV in runtime.mapiternext under reflect2's UnsafeIterate) the first
# time json-iterator encodes a map[string]interface{}, that is on any custom resource
# (modern-go/reflect2#24, fixed in v1.0.2 by modern-go/reflect2#25). Debian bookworm ships
# v1.0.2 as a source package; its Go files replace the vendored ones before the build.
REFLECT2_DEB_VERSION=1.0.2-2
# Bumped whenever the build changes what it produces, so a machine holding binaries of an
# older build (revision 1: reflect2 v1.0.1) builds again instead of using them.
BUILD_REVISION=2
BINARIES=(kube-apiserver kube-controller-manager)
APT_PACKAGES=(golang-1.19-go etcd-server make rsync dpkg-dev)
GO_BIN=/usr/lib/go-1.19/bin
CACHE="${NODEMEDIC_CACHE:-$HOME/.cache/nodemedic}"
DEST="$CACHE/kube-$KUBE_VERSION-r$BUILD_REVISION"
SRC_LIST=/etc/apt/sources.list.d/nodemedic-deb-src.sources

say() { printf 'build-kube: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }
trap 'die "failed at line $LINENO (exit $?): $BASH_COMMAND"' ERR

cached() {
    local bin
    for bin in "${BINARIES[@]}"; do
        [[ -x "$DEST/$bin" ]] || return 1
    done
    [[ -x /usr/bin/etcd ]]
}

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# deb-src stanzas copied from the machine's own deb822 list, so no mirror is named here.
add_deb_src() {
    if grep -rqsE '^(Types:.*deb-src|deb-src[[:space:]])' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        return
    fi
    local origin=/etc/apt/sources.list.d/debian.sources
    if [[ -f $origin ]]; then
        sed -E 's/^Types:.*$/Types: deb-src/' "$origin" | as_root tee "$SRC_LIST" >/dev/null
    elif [[ -f /etc/apt/sources.list ]]; then
        sed -nE 's/^deb[[:space:]]/deb-src /p' /etc/apt/sources.list \
            | as_root tee "${SRC_LIST%.sources}.list" >/dev/null
    else
        die "no Debian source list found to derive a deb-src entry from"
    fi
    say "added deb-src entries derived from the machine's Debian source list"
}

install_packages() {
    local missing=()
    local pkg
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$pkg")
    done
    add_deb_src
    say "apt-get update"
    as_root apt-get update -qq
    if ((${#missing[@]})); then
        say "installing ${missing[*]}"
        as_root env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

# Run in the build's work directory, where apt-get source unpacks.
replace_reflect2() {
    local vendored=$1
    [[ -f $vendored/unsafe_map.go ]] || die "no vendored reflect2 at $vendored"
    say "fetching source package golang-github-modern-go-reflect2=$REFLECT2_DEB_VERSION"
    apt-get source -qq "golang-github-modern-go-reflect2=$REFLECT2_DEB_VERSION" >/dev/null
    local fixed
    fixed=$(find . -mindepth 1 -maxdepth 1 -type d -name 'golang-github-modern-go-reflect2-*' | head -n1)
    [[ -n $fixed && -f $fixed/go_above_118.go ]] || die "reflect2 source package lacks go_above_118.go"
    rm -f "$vendored"/*.go "$vendored"/*.s
    find "$fixed" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' \) ! -name '*_test.go' \
        -exec cp -t "$vendored" {} +
    say "vendored reflect2 replaced by $REFLECT2_DEB_VERSION"
}

build() {
    local work="$CACHE/build-kube-$KUBE_VERSION-r$BUILD_REVISION"
    rm -rf "$work"
    mkdir -p "$work"
    cd "$work"
    say "fetching source package kubernetes=$DEB_VERSION"
    apt-get source -qq "kubernetes=$DEB_VERSION" >/dev/null
    local src
    src=$(find . -mindepth 1 -maxdepth 1 -type d -name 'kubernetes-*' | head -n1)
    [[ -n $src && -f $src/Makefile ]] || die "source package did not unpack a kubernetes tree"
    replace_reflect2 "$src/vendor/github.com/modern-go/reflect2"
    cd "$src"
    say "compiling ${BINARIES[*]} (several minutes on 2 cores)"
    # The tarball has no .git: version.sh takes the version from these variables instead.
    PATH="$GO_BIN:$PATH" \
        KUBE_GIT_VERSION="v$KUBE_VERSION" KUBE_GIT_TREE_STATE=archive \
        KUBE_GIT_COMMIT=0000000000000000000000000000000000000000 \
        make WHAT="${BINARIES[*]/#/cmd/}"
    mkdir -p "$DEST"
    local bin
    for bin in "${BINARIES[@]}"; do
        local out
        out=$(find _output -type f -name "$bin" -perm -u+x | head -n1)
        [[ -n $out ]] || die "build produced no $bin"
        install -m 0755 "$out" "$DEST/$bin.tmp"
        mv -f "$DEST/$bin.tmp" "$DEST/$bin"
    done
    cd "$CACHE"
    rm -rf "$work"
}

main() {
    if [[ ${1:-} == --print-dest ]]; then
        printf '%s\n' "$DEST"
        return
    fi
    mkdir -p "$CACHE"
    # One build at a time: `make test` and the test fixture may both ask for it.
    exec 9>"$CACHE/build-kube.lock"
    flock 9
    if cached; then
        say "cached: $DEST (${BINARIES[*]}), etcd /usr/bin/etcd"
        return
    fi
    SECONDS=0
    install_packages
    if ! cached; then
        build
    fi
    cached || die "binaries missing after build"
    say "built into $DEST in ${SECONDS}s"
}

main "$@"
