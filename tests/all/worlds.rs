//! Every released world keeps loading: components built against
//! `tiny-harness:plugin@0.2.0`, against 0.3.0 as it first shipped (before
//! the `enterprise` grant) and against today's 0.3.0, kept in
//! `tests/fixtures/worlds` with their sha256 and the commands that built
//! them, load and run in today's host, their registrations lifted into
//! today's types; a version never released is refused in one line; and
//! the world cannot change without a new version.

use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::{Digest, Sha256};
use tiny_harness_core::declaration::{Grant, Transport};
use tiny_harness_host::{Host, PluginSpec};
use tiny_harness_wasm::{LoadError, Plugin, PluginEngine};

use crate::common::{call, host, text_of};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/worlds")
}

/// The fixture `name`, checked against `SHA256SUMS`.
fn fixture(name: &str) -> PathBuf {
    let path = fixtures().join(name);
    let sums = std::fs::read_to_string(fixtures().join("SHA256SUMS")).unwrap();
    let want = sums
        .lines()
        .find_map(|l| {
            let mut fields = l.split_whitespace();
            let (hash, file) = (fields.next()?, fields.next()?);
            (file == name).then(|| hash.to_owned())
        })
        .unwrap_or_else(|| panic!("{name} is not in SHA256SUMS"));
    let got = hex::encode(Sha256::digest(std::fs::read(&path).unwrap()));
    assert_eq!(got, want, "{name} is not the committed fixture");
    path
}

/// The pin hash today's `hello` registers `greet` with.
fn greet_hash(host: &Host, name: &str) -> String {
    host.registry()
        .tools()
        .find(|t| t.name.to_string() == name)
        .map(|t| t.definition_hash.to_string())
        .unwrap_or_else(|| panic!("{name} is not registered"))
}

#[tokio::test]
async fn hello_built_for_every_released_world_greets() {
    let mut specs = vec![PluginSpec::new(
        "today",
        crate::common::plugin_wasm("hello"),
    )];
    for version in ["0.2.0", "0.3.0-first", "0.3.0"] {
        let name = format!("v{}", version.replace(['.', '-'], "_"));
        specs.push(PluginSpec::new(
            &name,
            fixture(&format!("hello-{version}.wasm")),
        ));
    }
    let host = host(specs).await;
    let today = greet_hash(&host, "today/hello.greet");
    for plugin in ["v0_2_0", "v0_3_0_first", "v0_3_0"] {
        let name = format!("{plugin}/hello.greet");
        let outcome = call(&host, &name, json!({"name": "Ada"})).await;
        assert_eq!(text_of(&outcome), "Hello, Ada!", "{plugin}");
        // Lifted field by field: the same definition, so the same pin.
        assert_eq!(greet_hash(&host, &name), today, "{plugin}");
    }
}

#[tokio::test]
async fn older_mcp_declarations_are_lifted_with_what_they_lack_unset() {
    let engine = PluginEngine::with_compile_cache(None).unwrap();
    let config = json!({"mcpServers": {
        "local": {"command": "node", "args": ["server.js"], "start_timeout_ms": 9000},
        "remote": {"url": "http://127.0.0.1:3001/mcp", "headers": {"X-Team": "blue"}},
        "tracker": {
            "url": "https://tracker.example.com/mcp",
            "oauth": {"grant": "client_credentials", "client_id": "th", "client_secret": "${S}"}
        }
    }});
    for version in ["0.2.0", "0.3.0-first"] {
        let mut spec = PluginSpec::new("mcp", fixture(&format!("mcp-{version}.wasm")));
        spec.config = config.clone();
        if version == "0.2.0" {
            // Its mcp plugin knew no `oauth` key (and its world no field).
            spec.config["mcpServers"]["tracker"]
                .as_object_mut()
                .unwrap()
                .remove("oauth");
        }
        let (plugin, tools) = Plugin::load(&engine, spec)
            .await
            .unwrap_or_else(|e| panic!("{version}: {e}"));
        assert!(tools.is_empty());
        let sources = plugin.mcp_sources();
        let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["local", "remote", "tracker"], "{version}");
        let Transport::Stdio(stdio) = &sources[0].transport else {
            panic!("{version}: local is not stdio")
        };
        assert_eq!(stdio.command, "node");
        assert_eq!(stdio.args, ["server.js"]);
        assert_eq!(
            sources[0].start_timeout,
            Some(std::time::Duration::from_millis(9000)),
            "{version}"
        );
        let Transport::Http(remote) = &sources[1].transport else {
            panic!("{version}: remote is not HTTP")
        };
        assert_eq!(remote.url, "http://127.0.0.1:3001/mcp");
        assert_eq!(remote.headers, [("X-Team".to_owned(), "blue".to_owned())]);
        assert!(remote.oauth.is_none());
        let Transport::Http(tracker) = &sources[2].transport else {
            panic!("{version}: tracker is not HTTP")
        };
        match version {
            // 0.2.0 had no oauth: what the plugin could not say is unset
            // in today's declaration.
            "0.2.0" => assert!(tracker.oauth.is_none()),
            _ => {
                let oauth = tracker.oauth.as_ref().expect("oauth lifted");
                assert_eq!(oauth.grant, Grant::ClientCredentials);
                assert_eq!(oauth.client_id.as_deref(), Some("th"));
                assert_eq!(oauth.client_secret.as_deref(), Some("${S}"));
                assert!(oauth.identity_provider.is_none());
            }
        }
    }
}

#[tokio::test]
async fn a_version_never_released_is_refused_in_one_line() {
    // hello for 0.2.0 with every `@0.2.0` of its interface names made
    // `@0.9.0`: the same length, so still a valid component.
    let mut bytes = std::fs::read(fixture("hello-0.2.0.wasm")).unwrap();
    let (from, to) = (
        b"tiny-harness:plugin/types@0.2.0",
        b"tiny-harness:plugin/types@0.9.0",
    );
    let mut patched = 0;
    for i in 0..bytes.len().saturating_sub(from.len()) {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            patched += 1;
        }
    }
    assert!(patched > 0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.wasm");
    std::fs::write(&path, bytes).unwrap();
    let engine = PluginEngine::with_compile_cache(None).unwrap();
    let err = Plugin::load(&engine, PluginSpec::new("future", &path))
        .await
        .unwrap_err();
    assert!(matches!(err, LoadError::WrongWorld { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("tiny-harness:plugin@0.9.0, which this host never released"),
        "{message}"
    );
    assert!(message.contains("it loads 0.3.0 and 0.2.0"), "{message}");
    assert_eq!(message.lines().count(), 1, "{message}");
}

/// The WIT with its comments and blank lines taken out and its
/// whitespace made single: what a component's types depend on.
fn shape(wit: &str) -> String {
    wit.lines()
        .map(|l| {
            l.split("//")
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn sha(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Each world's shape, pinned. A change to `wit/plugin.wit` other than to
/// its comments needs a new version: move the old file to
/// `wit/released/VERSION/`, bind it in `host/wasm/src/worlds.rs`, build a
/// fixture against it, and pin the new shape here.
const SHAPES: &[(&str, &str, &str)] = &[
    (
        "wit/plugin.wit",
        "0.3.0",
        "8b9237ead4d11ce573648eda19e9b4b66e85944420d1ab075ab678f6a80683f6",
    ),
    (
        "wit/released/0.3.0-first/plugin.wit",
        "0.3.0",
        "f71dd890b52f3aa6ce402b64cc12be8c5964c377ae8e9a890a9d9449607a92a3",
    ),
    (
        "wit/released/0.2.0/plugin.wit",
        "0.2.0",
        "8d1276fe91d9af62f1a7e04250738f32428776e97e6d69caa3d954ec57db96ea",
    ),
];

#[test]
fn the_world_does_not_change_without_a_new_version() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for (path, version, _) in SHAPES {
        let text = std::fs::read_to_string(root.join(path)).unwrap();
        assert!(
            text.contains(&format!("package tiny-harness:plugin@{version};")),
            "{path} is not version {version}"
        );
        found.push(format!(
            "    ({path:?}, {version:?}, {:?}),",
            sha(&shape(&text))
        ));
    }
    let pinned: Vec<String> = SHAPES
        .iter()
        .map(|(p, v, h)| format!("    ({p:?}, {v:?}, {h:?}),"))
        .collect();
    assert_eq!(
        pinned,
        found,
        "a world's shape changed: a released one never may; today's only with a new version \
         (see this test's doc). The shapes now:\n{}",
        found.join("\n")
    );
    assert_eq!(tiny_harness_wasm::RELEASED_WORLDS, ["0.3.0", "0.2.0"]);
}
