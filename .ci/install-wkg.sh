#!/usr/bin/env bash
# Installs the Bytecode Alliance's `wkg` CLI (wasm-pkg-tools), pinned, into
# cargo's bin directory: host/cli/tests/cli/wkg.rs pushes and pulls
# components with it to prove `plugin publish` and `plugin add` interoperate.
# Idempotent: nothing happens when that wkg already reports the version.
# Keep WKG_VERSION equal to the one in host/cli/tests/cli/wkg.rs.
set -euo pipefail

WKG_VERSION=0.16.1
bin="${CARGO_HOME:-$HOME/.cargo}/bin"

if [ "$("$bin/wkg" --version 2>/dev/null || true)" = "wkg $WKG_VERSION" ]; then
    echo "wkg $WKG_VERSION is installed ($bin/wkg)"
    exit 0
fi
# Its Cargo.lock, as released: the build is the one its authors tested.
# A debug build: the tests push and pull a few hundred KB with it, and it
# builds faster (measured on a 2-core machine, each beside another build:
# 3 min 13 s of CPU, 8 min 47 s of wall time at the lowest priority; the
# release build took 8 min 55 s of wall time).
cargo install --locked --debug wkg --version "$WKG_VERSION"
installed="$("$bin/wkg" --version)"
[ "$installed" = "wkg $WKG_VERSION" ] || {
    echo "$bin/wkg reports '$installed', not 'wkg $WKG_VERSION'" >&2
    exit 1
}
echo "installed $installed ($bin/wkg)"
