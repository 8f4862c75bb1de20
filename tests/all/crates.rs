//! The arrows between the host's crates, as their manifests declare them
//! (`cargo metadata`): the compiler keeps a crate from using one it does
//! not depend on, and this keeps a manifest from adding the dependency.
//! The rule: the core depends on none of ours; the sandbox, the
//! intrinsics and the providers on the core; the plugin host (wasm) and
//! the MCP runtime on the core and the sandbox, never on each other; the
//! facade on those; the command line on the facade and the crates below
//! it (nothing depends on the command line); the test harness on the
//! facade and the plugin host. No crate but the
//! command line builds `clap`, `anyhow` or `toml_edit` as a dependency of
//! its own.

use std::collections::{BTreeMap, BTreeSet};

/// Each crate of ours, with the crates of ours it may depend on (in any
/// kind: normal, build or dev).
const ALLOWED: &[(&str, &[&str])] = &[
    ("tiny-harness-core", &[]),
    // The tests' prerequisites, installed once: depends on none of ours,
    // and only test code (and the OCI test registry) depends on it.
    ("tiny-harness-prereq", &[]),
    ("tiny-harness-sandbox", &["tiny-harness-core"]),
    ("tiny-harness-intrinsic", &["tiny-harness-core"]),
    // The intrinsics only for a test that walks their schemas.
    (
        "tiny-harness-provider",
        &["tiny-harness-core", "tiny-harness-intrinsic"],
    ),
    (
        "tiny-harness-wasm",
        &["tiny-harness-core", "tiny-harness-sandbox"],
    ),
    (
        "tiny-harness-mcp",
        &["tiny-harness-core", "tiny-harness-sandbox"],
    ),
    // Components in OCI registries (its own tests use its test registry).
    (
        "tiny-harness-oci",
        &[
            "tiny-harness-core",
            "tiny-harness-oci",
            "tiny-harness-prereq",
        ],
    ),
    (
        "tiny-harness-host",
        &[
            "tiny-harness-core",
            "tiny-harness-sandbox",
            "tiny-harness-intrinsic",
            "tiny-harness-provider",
            "tiny-harness-wasm",
            "tiny-harness-mcp",
            "tiny-harness-oci",
            "tiny-harness-prereq",
        ],
    ),
    // The test harness for plugins: the facade, the plugin host for its
    // stand-ins, and the core's bounded file reads for cases files.
    (
        "tiny-harness-testing",
        &[
            "tiny-harness-host",
            "tiny-harness-wasm",
            "tiny-harness-core",
        ],
    ),
    // The gateway serves a facade's host; the wire codec names its tools
    // and the core's display helpers keep its log lines on one line. Its
    // bench calls the bare plugin bindings beside it.
    (
        "tiny-harness-serve",
        &[
            "tiny-harness-host",
            "tiny-harness-core",
            "tiny-harness-provider",
            "tiny-harness-wasm",
            "tiny-harness-prereq",
        ],
    ),
    // The operator's tooling works on the layers below the facade too;
    // `serve` only parses flags for the gateway.
    (
        "tiny-harness-cli",
        &[
            "tiny-harness-host",
            "tiny-harness-serve",
            "tiny-harness-core",
            "tiny-harness-sandbox",
            "tiny-harness-intrinsic",
            "tiny-harness-provider",
            "tiny-harness-wasm",
            "tiny-harness-mcp",
            "tiny-harness-oci",
            "tiny-harness-prereq",
            "tiny-harness-testing",
        ],
    ),
];

/// Dependencies only the command line may name.
const CLI_ONLY: &[&str] = &["clap", "anyhow", "toml_edit"];

/// Each workspace package with the names and kinds of what it depends on.
fn manifests() -> BTreeMap<String, Vec<(String, String)>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = std::process::Command::new(cargo)
        .current_dir(&root)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let mut out = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("a name").to_owned();
        let deps = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .map(|d| {
                let name = d["name"].as_str().expect("a name").to_owned();
                let kind = d["kind"].as_str().unwrap_or("normal").to_owned();
                (name, kind)
            })
            .collect();
        out.insert(name, deps);
    }
    out
}

#[test]
fn each_crate_depends_only_on_the_crates_below_it() {
    let manifests = manifests();
    let ours: BTreeSet<&str> = ALLOWED.iter().map(|(name, _)| *name).collect();
    for (name, _) in ALLOWED {
        assert!(
            manifests.contains_key(*name),
            "{name} is not in the workspace"
        );
    }
    let mut wrong = Vec::new();
    for (name, deps) in &manifests {
        if name == "tiny-harness-tests" {
            continue;
        }
        let Some((_, allowed)) = ALLOWED.iter().find(|(n, _)| n == name) else {
            wrong.push(format!(
                "{name} is a crate this test does not know: add it to ALLOWED"
            ));
            continue;
        };
        for (dep, kind) in deps {
            if ours.contains(dep.as_str()) && !allowed.contains(&dep.as_str()) {
                wrong.push(format!("{name} depends on {dep} ({kind})"));
            }
            let cli_only = CLI_ONLY.contains(&dep.as_str());
            if cli_only && name != "tiny-harness-cli" && kind != "dev" {
                wrong.push(format!(
                    "{name} depends on {dep} ({kind}), which only the CLI may"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
