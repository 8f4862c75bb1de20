#!/usr/bin/env bash
# How long an embedder's debug build takes to compile the bundled `fs` and
# `shell` components, without and with the profile lines the README gives,
# in one run (docs/performance.md, "An embedder's debug build"). Each
# variant gets a target directory of its own under target/embedder, so the
# first run builds the host twice (about 10 minutes each on 2 cores).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="$here/../../target/embedder"
profile='
[profile.dev.package.cranelift-codegen]
opt-level = 2
[profile.dev.package.regalloc2]
opt-level = 2
[profile.dev.package.cranelift-assembler-x64]
opt-level = 2'
for variant in plain profiled; do
    dir="$target/$variant"
    mkdir -p "$dir/src"
    cp "$here/src/main.rs" "$dir/src/main.rs"
    sed "s|path = \"../../host\"|path = \"$here/../../host\"|" "$here/Cargo.toml" > "$dir/Cargo.toml"
    [ "$variant" = profiled ] && printf '%s\n' "$profile" >> "$dir/Cargo.toml"
    cp "$here/../../Cargo.lock" "$dir/Cargo.lock"
    start=$(date +%s)
    cargo build --quiet --manifest-path "$dir/Cargo.toml" --target-dir "$dir/target"
    echo "$variant: built in $(( $(date +%s) - start )) s"
done
for round in 1 2 3; do
    for variant in plain profiled; do
        echo "$variant (round $round): $("$target/$variant/target/debug/embedder")"
    done
done
