//! Search clients driven by the Python SDK's client: over HTTP at both
//! revisions beside a plain client whose listing stays what it was, and
//! over stdio across a reload.

use serde_json::{Value, json};

use super::super::super::{fs_wasm, shared_cache};
use super::super::{CI_TOKEN, CLIENTS, Gateway, IDE_TOKEN, client, post, tokens_file};
use super::{names, two_plugins, without_ids};

/// The body of a raw HTTP response (a 2026-07-28 answer is one JSON body).
fn body(response: &str) -> &str {
    response.split_once("\r\n\r\n").unwrap().1
}

#[test]
fn over_http_a_search_client_finds_and_calls_and_a_plain_clients_listing_is_unchanged() {
    let list = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":\
                {\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\
                \"io.modelcontextprotocol/clientCapabilities\":{}}}}";
    let headers = |token: &str| {
        format!(
            "Authorization: Bearer {token}\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/list\r\n"
        )
    };
    // `ci`'s listing, beside an `ide` of every tool and beside a search
    // `ide`: the same bytes.
    let mut plain = Vec::new();
    for ide in ["", "search = true\n"] {
        let dir = two_plugins(&format!("{CLIENTS}{ide}"));
        let tokens = tokens_file(dir.path());
        let gateway = Gateway::start(dir.path(), &["--tokens", tokens.to_str().unwrap()]);
        let (status, response) = post(gateway.addr, &headers(CI_TOKEN), list);
        assert_eq!(status, 200, "{response}");
        plain.push(body(&response).to_owned());
        if ide.is_empty() {
            continue;
        }
        let (status, response) = post(gateway.addr, &headers(IDE_TOKEN), list);
        assert_eq!(status, 200, "{response}");
        let listed: Value = serde_json::from_str(body(&response)).unwrap();
        assert_eq!(
            names(&listed["result"]["tools"]),
            ["search_tools", "call_tool"]
        );
        // The Python SDK's client: a session lists what it found and is
        // told so; a stateless client is not. The SDK checks
        // `search_tools`' structured content against its output schema.
        for (mode, kept) in [("legacy", true), ("2026-07-28", false)] {
            let answer = client(json!({
                "mode": mode, "url": gateway.url(), "token": IDE_TOKEN,
                "steps": [
                    ["list"],
                    ["changed_after", ["call", "search_tools", {"query": "greet someone by name"}], if kept { 10 } else { 3 }],
                    ["call", "search_tools", {"query": "greet someone by name", "limit": 1}],
                    ["list"],
                    ["call", "call_tool", {"name": "p__hello.greet", "arguments": {"name": "Ada"}}],
                    ["call", "p__hello.greet", {"name": "Ada"}],
                ],
            }));
            let steps = &answer["steps"];
            assert_eq!(steps[0], json!(["search_tools", "call_tool"]), "{answer}");
            assert_eq!(steps[1]["is_error"], false, "{answer}");
            assert_eq!(steps[1]["changed"], kept, "{mode}: {answer}");
            let found = &steps[2];
            assert_eq!(found["is_error"], false, "{found}");
            assert_eq!(
                found["structured"]["tools"][0]["name"], "p__hello.greet",
                "{found}"
            );
            let listed = steps[3].as_array().unwrap();
            assert_eq!(
                listed.contains(&json!("p__hello.greet")),
                kept,
                "{mode}: {answer}"
            );
            let (through, direct) = (&steps[4], &steps[5]);
            assert_eq!(through["is_error"], false, "{through}");
            assert!(
                through["text"].as_str().unwrap().contains("Ada"),
                "{through}"
            );
            assert_eq!(
                without_ids(through["text"].as_str().unwrap()),
                without_ids(direct["text"].as_str().unwrap())
            );
            assert_eq!(through["structured"], direct["structured"]);
        }
    }
    assert_eq!(plain[0], plain[1]);
    let listed: Value = serde_json::from_str(&plain[0]).unwrap();
    assert_eq!(
        names(&listed["result"]["tools"]),
        ["read", "fs__workspace.stat"]
    );
}

#[test]
fn a_reload_gives_a_search_client_an_index_of_its_new_set() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tiny-harness.toml"),
        "[plugins.p]\npath = \"p.wasm\"\n[serve.clients.stdio]\nsearch = true\n",
    )
    .unwrap();
    let component = dir.path().join("p.wasm");
    std::fs::copy(fs_wasm().with_file_name("hello.wasm"), &component).unwrap();
    let rebuilt = fs_wasm().with_file_name("textstats_rust.wasm");
    let answer = client(json!({
        "mode": "legacy",
        "command": [
            env!("CARGO_BIN_EXE_tiny-harness"), "serve", "--watch", "--config",
            dir.path().join("tiny-harness.toml").display().to_string(),
        ],
        "env": {"TINY_HARNESS_CACHE_DIR": shared_cache().display().to_string()},
        "steps": [
            ["call", "search_tools", {"query": "count the words of a text"}],
            ["replace", rebuilt.display().to_string(), component.display().to_string(), 20],
            ["call", "search_tools", {"query": "count the words of a text"}],
            ["call", "call_tool", {"name": "p__textstats.stats", "arguments": {"text": "one two three"}}],
        ],
    }));
    let steps = &answer["steps"];
    let found = |step: &Value| names(&step["structured"]["tools"]);
    // Nothing of hello's counts words; the rebuilt plugin's tool does,
    // and the new index finds it.
    assert!(found(&steps[0]).is_empty(), "{answer}");
    assert_eq!(steps[1]["changed"], true, "{answer}");
    assert_eq!(found(&steps[2])[0], "p__textstats.stats", "{answer}");
    assert_eq!(steps[3]["is_error"], false, "{answer}");
    assert!(
        steps[3]["text"].as_str().unwrap().contains("\"words\":3"),
        "{answer}"
    );
}
