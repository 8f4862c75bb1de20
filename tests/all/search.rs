//! Deferred tools and the search over them, as an embedder builds them:
//! a plugin deferred whole, patterns with an exception, the index over
//! the deferred tools alone (with their pinned hashes), built again with
//! each snapshot.

use tiny_harness_host::{
    Deferral, HostBuilder, PluginSpec, SearchError, ToolPattern, ToolPatternError,
};

use crate::common::plugin_wasm;

#[tokio::test]
async fn a_search_finds_the_deferred_tools_only_and_follows_each_snapshot() {
    let mut shell = PluginSpec::new("shell", plugin_wasm("shell"));
    shell.defer = true;
    let host = HostBuilder::new()
        .compile_cache(None)
        .plugin(PluginSpec::new("fs", plugin_wasm("fs")))
        .plugin(shell)
        .plugin(PluginSpec::new("net", plugin_wasm("net")))
        .defer(ToolPattern::new("fs/*").unwrap())
        .always(ToolPattern::new("fs/workspace.read_*").unwrap())
        .build()
        .await
        .unwrap();
    let registry = host.registry();
    assert!(registry.is_deferred("shell/exec.run"));
    assert!(registry.is_deferred("fs/workspace.write_file"));
    assert!(!registry.is_deferred("fs/workspace.read_file"));
    assert!(!registry.is_deferred("net/http.get"));
    // Built with the snapshot, before any search.
    let index = registry.search_index().expect("an index");
    let mut indexed: Vec<&str> = index.tools().map(|(name, _)| name).collect();
    indexed.sort_unstable();
    assert_eq!(
        indexed,
        [
            "fs/workspace.list_dir",
            "fs/workspace.search",
            "fs/workspace.stat",
            "fs/workspace.write_file",
            "shell/exec.run"
        ]
    );

    let hits = host.search("run a program", None).unwrap();
    assert_eq!(hits[0].name, "shell/exec.run");
    assert_eq!(
        hits[0].definition_hash,
        registry.get("shell/exec.run").unwrap().definition_hash
    );
    let hits = host.search("write text to a file", Some(1)).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].name, "fs/workspace.write_file");
    // Never a tool that is not deferred, however well it fits.
    for query in ["read file", "http get url", "fetch a web page"] {
        let hits = host.search(query, Some(20)).unwrap();
        assert!(
            hits.iter()
                .all(|h| !h.name.starts_with("net/") && h.name != "fs/workspace.read_file"),
            "{query}: {hits:?}"
        );
    }
    assert!(matches!(host.search("", None), Err(SearchError::Empty)));
    assert!(matches!(
        host.search("x", Some(21)),
        Err(SearchError::Limit { .. })
    ));

    // A new snapshot that defers nothing has no index, and finds nothing.
    host.live_registry()
        .update(|current| {
            let mut next = current.clone();
            next.set_deferral(Deferral::default());
            Ok::<_, std::convert::Infallible>(next)
        })
        .unwrap();
    assert!(host.registry().search_index().is_none());
    assert!(host.search("run a program", None).unwrap().is_empty());
    // The old snapshot keeps its own.
    assert!(registry.search_index().is_some());
}

#[test]
fn patterns_are_checked_where_they_are_made() {
    assert_eq!(ToolPattern::new(""), Err(ToolPatternError::Empty));
    assert_eq!(
        ToolPattern::new("mcp/\u{1b}*"),
        Err(ToolPatternError::Control)
    );
    assert!(
        ToolPattern::new("mcp/*")
            .unwrap()
            .matches("mcp/github.create_issue")
    );
}
