#!/usr/bin/env bash
# Builds the interpreted textstats components into OUT_DIR:
#   OUT_DIR/textstats-python.wasm  (componentize-py)
#   OUT_DIR/textstats-js.wasm      (componentize-js)
# Each toolchain is installed on first use, pinned: componentize-py with
# the hashes of plugins/examples/textstats-python/requirements.txt into its
# .venv, componentize-js from textstats-js/package-lock.json (npm ci).
# A component newer than its sources and the WIT is left as it is.
#
# With --toolchains, both toolchains are installed even when no component
# here is stale (for a script that builds its own components with them,
# such as tests/fixtures/faulty/build.sh).
#
# Usage: plugins/examples/build.sh [--toolchains] OUT_DIR
set -euo pipefail

fail() {
    echo "build.sh: $*" >&2
    exit 1
}

# Runs "$@" until it succeeds, three times at most, 5 s apart: a registry
# can reset a connection in the middle of a download (npm does not retry
# a body cut short), and a fresh machine's first build should not fail
# for it.
retried() {
    local try
    for try in 1 2 3; do
        "$@" && return 0
        [ "$try" -lt 3 ] || return 1
        echo "build.sh: $1 failed (try $try of 3); again in 5 s" >&2
        sleep 5
    done
}

toolchains=0
if [ "${1:-}" = --toolchains ]; then
    toolchains=1
    shift
fi
[ $# -eq 1 ] || fail "usage: build.sh [--toolchains] OUT_DIR"
here=$(cd "$(dirname "$0")" && pwd)
wit=$(cd "$here/../../wit" && pwd)
mkdir -p "$1" || fail "cannot make $1"
out=$(cd "$1" && pwd)
# One build at a time into OUT_DIR (tests and CI may start several): the
# toolchains' installs and the components' writes are not shared-safe.
exec 9> "$out/.build.lock"
flock 9 || fail "cannot lock $out/.build.lock"

# Whether $1 is missing or older than any of the files after it.
stale() {
    local target=$1
    shift
    [ -f "$target" ] || return 0
    local source
    for source in "$@"; do
        [ "$source" -nt "$target" ] && return 0
    done
    return 1
}

python=$here/textstats-python
js=$here/textstats-js

# componentize-py into textstats-python/.venv, unless it is there.
python_toolchain() {
    if [ ! -x "$python/.venv/bin/componentize-py" ]; then
        /usr/bin/python3 -m venv --clear "$python/.venv" \
            || fail "cannot make a venv with /usr/bin/python3: install python3 with venv"
        retried "$python/.venv/bin/pip" install --quiet --require-hashes -r "$python/requirements.txt" \
            || fail "cannot install componentize-py (pinned in $python/requirements.txt): is PyPI reachable?"
    fi
}

# componentize-js into textstats-js/node_modules, unless it is there.
js_toolchain() {
    if [ ! -x "$js/node_modules/.bin/componentize-js" ]; then
        command -v npm > /dev/null || fail "npm is not installed: install Node.js (20 or later)"
        retried npm ci --prefix "$js" --no-audit --no-fund --loglevel=error \
            || fail "cannot install componentize-js (pinned in $js/package-lock.json): is the npm registry reachable?"
    fi
}

if [ "$toolchains" = 1 ]; then
    python_toolchain
    js_toolchain
fi

if stale "$out/textstats-python.wasm" "$python/textstats.py" "$wit/plugin.wit"; then
    python_toolchain
    (cd "$python" && PYTHONDONTWRITEBYTECODE=1 .venv/bin/componentize-py -d "$wit" -w plugin \
        componentize textstats -o "$out/textstats-python.wasm" > /dev/null) \
        || fail "componentize-py could not build $python/textstats.py (its messages are above)"
fi

if stale "$out/textstats-js.wasm" "$js/textstats.js" "$wit/plugin.wit"; then
    js_toolchain
    # Only the WASI features it uses: no fetch, HTTP, random or clocks.
    (cd "$js" && ./node_modules/.bin/componentize-js --wit "$wit" --world-name plugin \
        --disable http fetch-event random clocks -o "$out/textstats-js.wasm" textstats.js > /dev/null) \
        || fail "componentize-js could not build $js/textstats.js (its messages are above)"
fi
