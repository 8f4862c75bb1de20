use std::time::Duration;

use super::*;

fn parse(text: &str) -> Result<ServeConfig, ServeError> {
    let table: toml::Table = toml::from_str(text).unwrap();
    ServeConfig::from_table(table.get("serve").and_then(|v| v.as_table()))
}

#[test]
fn clients_limits_and_allowlists_are_read() {
    let config = parse(
        r#"
        [serve]
        allowed_origins = ["https://app.example.com:*"]
        [serve.limits]
        request_kib = 64
        relist_interval_ms = 250
        drain_grace_secs = 0
        drain_secs = 5
        [serve.clients.ci]
        tools = ["fs/*"]
        rename = { read = "fs/workspace.read_file" }
        "#,
    )
    .unwrap();
    assert_eq!(config.limits.request_bytes, 64 << 10);
    assert_eq!(config.limits.relist_interval, Duration::from_millis(250));
    assert_eq!(config.limits.drain_grace, Duration::ZERO);
    assert_eq!(config.limits.drain, Duration::from_secs(5));
    assert_eq!(config.limits.sessions, ServeLimits::default().sessions);
    let ci = &config.clients["ci"];
    assert_eq!(ci.tools.as_ref().unwrap().len(), 1);
    assert_eq!(ci.rename["read"], "fs/workspace.read_file");
    assert!(!ci.search && ci.always.is_empty());
}

#[test]
fn a_search_client_is_read_with_its_always_globs() {
    let config = parse(
        r#"
        [serve.clients.ide]
        tools = ["fs/*"]
        search = true
        always = ["fs/workspace.stat"]
        rename = { search = "fs/workspace.search" }
        [serve.clients.plain]
        rename = { search_tools = "fs/workspace.search" }
        "#,
    )
    .unwrap();
    let ide = &config.clients["ide"];
    assert!(ide.search);
    assert_eq!(ide.always[0].as_str(), "fs/workspace.stat");
    // Only a search client has tools of those names.
    assert!(!config.clients["plain"].search);
}

#[test]
fn bad_entries_are_refused_naming_the_key() {
    for (text, says) in [
        ("[serve]\nport = 1", "unknown field `port`"),
        (
            "[serve.limits]\nrequest_kib = 0",
            "limits.request_kib: 0 is outside",
        ),
        (
            "[serve.limits]\ndrain_secs = 0",
            "limits.drain_secs: 0 is outside 1..=3600",
        ),
        (
            "[serve.limits]\ndrain_grace_secs = 3601",
            "limits.drain_grace_secs: 3601 is outside 0..=3600",
        ),
        ("[serve.clients.\"a b\"]\ntools = []", "a client name is"),
        (
            "[serve.clients.ci]\nrename = { \"a/b\" = \"x/y.z\" }",
            "clients.ci.rename",
        ),
        ("[serve.clients.ci]\ntools = [\"\"]", "clients.ci.tools"),
        (
            "[serve.clients.ci]\nalways = [\"fs/*\"]",
            "clients.ci.always: lists tools apart for a search client only",
        ),
        (
            "[serve.clients.ci]\nsearch = true\nalways = [\"\"]",
            "clients.ci.always: a glob is",
        ),
        (
            "[serve.clients.ci]\nsearch = true\nrename = { call_tool = \"fs/workspace.stat\" }",
            "clients.ci.rename: \"call_tool\" is the name of a search client's own tool",
        ),
        ("[serve.clients.ci]\nsearch = \"yes\"", "invalid type"),
        (
            "[serve]\nallowed_origins = [\"app.example.com\"]",
            "lacks a scheme",
        ),
    ] {
        let error = parse(text).unwrap_err().to_string();
        assert!(error.contains(says), "{text:?}: {error}");
        assert!(!error.contains('\n'), "{error}");
    }
}
