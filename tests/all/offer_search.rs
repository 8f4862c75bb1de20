//! Deferred tools as each provider is offered them, and a search followed
//! by a call of the tool it found, through the library's `Turn`: the
//! host's search in every provider's form, the providers' own searches,
//! the found tools listed after the search (the prefix before them the
//! same bytes), and the journal's lines for each search and load.

use std::sync::Arc;

use serde_json::{Value, json};
use tiny_harness_host::{
    DirMode, GeminiSchema, Host, HostBuilder, Journal, PluginSpec, Provider, SEARCH_TOOL,
    SchemaLimits, SearchForm, TurnError,
};

use crate::common::{fs_over, plugin_wasm};

const LIST_DIR: &str = "fs/workspace.list_dir";

/// A host with `fs` deferred whole over a directory holding `a.txt`, and
/// `hello` not deferred; a journal when `journal` is given.
async fn host(form: SearchForm, journal: Option<Arc<Journal>>) -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "text").unwrap();
    let mut fs = fs_over(dir.path(), DirMode::ReadOnly);
    fs.defer = true;
    let mut builder = HostBuilder::new()
        .compile_cache(None)
        .plugin(fs)
        .plugin(PluginSpec::new("hello", plugin_wasm("hello")))
        .search_form(form);
    if let Some(journal) = journal {
        builder = builder.recorder(journal);
    }
    (builder.build().await.unwrap(), dir)
}

/// Each entry's compact JSON text.
fn texts(request: &tiny_harness_host::EncodedRequest) -> Vec<String> {
    request.entries().iter().map(|e| e.to_string()).collect()
}

fn wire(request: &tiny_harness_host::EncodedRequest, name: &str) -> String {
    request.codec.encode(name).unwrap().to_owned()
}

#[tokio::test]
async fn each_provider_is_offered_the_deferred_tools_and_the_search_in_its_own_form() {
    let (host, _dir) = host(SearchForm::Host, None).await;
    let deferred = host
        .registry()
        .tools()
        .filter(|t| t.name.as_str().starts_with("fs/"))
        .count();
    assert!(deferred >= 5);

    // Anthropic: every tool, the deferred ones marked, then the search.
    let request = host.offer(Provider::Anthropic);
    let entries = request.entries();
    assert_eq!(entries.len(), deferred + 2);
    for entry in &entries[..entries.len() - 1] {
        let name = entry["name"].as_str().unwrap();
        let is_fs = name.starts_with("fs__");
        assert_eq!(
            entry.get("defer_loading"),
            is_fs.then_some(&json!(true)),
            "{entry}"
        );
    }
    let search = entries.last().unwrap();
    assert_eq!(search["name"], SEARCH_TOOL);
    assert_eq!(search["input_schema"]["required"], json!(["query"]));
    assert!(request.search.as_ref().unwrap().by_host());

    // OpenAI Responses: the tools not deferred and a client tool search.
    let request = host.offer(Provider::OpenAiResponses);
    let entries = request.entries();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(entries[1]["type"], "tool_search");
    assert_eq!(entries[1]["execution"], "client");

    // Without deferred loading: the tools not deferred, then the search.
    let request = host.offer(Provider::OpenAiChat);
    let entries = request.entries();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["function"]["name"], SEARCH_TOOL);
    let request = host.offer(Provider::Gemini);
    assert_eq!(request.entries()[1]["name"], SEARCH_TOOL);
    let request = host.offer(Provider::Bedrock);
    assert_eq!(request.entries()[1]["toolSpec"]["name"], SEARCH_TOOL);
    // A deferred tool keeps its wire name, listed or not.
    assert_eq!(
        request.codec.decode(&wire(&request, LIST_DIR)),
        Ok(LIST_DIR)
    );

    // The next request sends Gemini's schemas as the first did.
    let subset = GeminiSchema::Subset(SchemaLimits::default());
    let request = host.offer_with(Provider::Gemini, subset);
    assert!(request.entries()[0].get("parameters").is_some());
    let search = search_response(Provider::Gemini, &json!({"query": "list a directory"}));
    let turn = host.run_calls(&request, &search).await.unwrap();
    let next = host.offer_next(&request, &turn);
    assert_eq!(next.gemini, subset);
    let entries = next.entries();
    assert!(entries.len() > 2);
    assert!(
        entries
            .iter()
            .all(|e| e.get("parametersJsonSchema").is_none()),
        "{entries:?}"
    );

    // A gateway's listing is every tool, with no search of the host's.
    let request = host.offer(Provider::Mcp);
    assert_eq!(request.entries().len(), deferred + 1);
    assert!(request.search.is_none());

    // The providers' own searches.
    let (host, _dir) = host_with(SearchForm::Provider).await;
    let request = host.offer(Provider::Anthropic);
    let last = (*request.entries().last().unwrap()).clone();
    assert_eq!(
        last,
        json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
    );
    let request = host.offer(Provider::OpenAiResponses);
    let entries = request.entries();
    assert_eq!(entries[1], &json!({"type": "tool_search"}));
    assert_eq!(entries[2]["type"], "namespace");
    let functions = entries[2]["tools"].as_array().unwrap();
    assert_eq!(functions.len(), deferred);
    assert!(functions.iter().all(|f| f["defer_loading"] == true));
    // Chat has no search of its own: the host's.
    let request = host.offer(Provider::OpenAiChat);
    assert_eq!(request.entries()[1]["function"]["name"], SEARCH_TOOL);
    let (host, _dir) = host_with(SearchForm::ProviderRegex).await;
    let request = host.offer(Provider::Anthropic);
    assert_eq!(
        request.entries().last().unwrap()["type"],
        "tool_search_tool_regex_20251119"
    );
}

async fn host_with(form: SearchForm) -> (Host, tempfile::TempDir) {
    host(form, None).await
}

/// A search for listing a directory, then a call of the tool found, as
/// `provider`'s responses, with the request each was an answer to.
#[tokio::test]
async fn a_search_then_a_call_of_the_found_tool_in_every_provider() {
    let journal_dir = tempfile::tempdir().unwrap();
    let journal_path = journal_dir.path().join("journal.jsonl");
    let journal = Arc::new(Journal::open(&journal_path, false).unwrap());
    let (host, _dir) = host(SearchForm::Host, Some(journal)).await;
    let query = json!({"query": "list the files in a directory", "limit": 3});
    for provider in [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::Bedrock,
    ] {
        let request = host.offer(provider);
        let search = search_response(provider, &query);
        let turn = host.run_calls(&request, &search).await.unwrap();
        assert_eq!(turn.found[0], LIST_DIR, "{provider}");
        assert!(!turn.any_error(), "{provider}: {:?}", turn.outcomes);
        let list_dir = wire(&request, LIST_DIR);
        match provider {
            Provider::Anthropic => {
                let block = &turn.results[0]["content"][0];
                assert_eq!(
                    block["content"][0],
                    json!({"type": "tool_reference", "tool_name": list_dir})
                );
            }
            Provider::OpenAiResponses => {
                let output = &turn.results[0];
                assert_eq!(output["type"], "tool_search_output");
                assert_eq!(output["call_id"], "s1");
                assert_eq!(output["tools"][0]["name"], list_dir.as_str());
                assert!(output["tools"][0].get("defer_loading").is_none());
            }
            _ => {
                let text = turn.outcomes[0].render();
                assert!(text.contains(&list_dir), "{provider}: {text}");
            }
        }
        let next = host.offer_next(&request, &turn);
        let (before, after) = (texts(&request), texts(&next));
        match provider {
            Provider::Anthropic | Provider::OpenAiResponses => assert_eq!(before, after),
            _ => {
                // Found tools come after everything offered before.
                assert_eq!(after[..before.len()], before[..], "{provider}");
                assert_eq!(next.loaded, turn.found, "{provider}");
                assert_eq!(after.len(), before.len() + turn.found.len());
                assert!(after[before.len()].contains(&list_dir));
            }
        }
        let call = call_response(provider, &list_dir);
        let turn = host.run_calls(&next, &call).await.unwrap();
        assert!(!turn.any_error(), "{provider}: {:?}", turn.outcomes);
        assert!(turn.outcomes[0].render().contains("a.txt"), "{provider}");
        // The next offer after that lists nothing twice.
        let again = host.offer_next(&next, &turn);
        assert_eq!(texts(&again), texts(&next));
    }
    let lines: Vec<Value> = std::fs::read_to_string(&journal_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let searches: Vec<&Value> = lines.iter().filter(|l| l["event"] == "search").collect();
    assert_eq!(searches.len(), 5);
    let hash = host
        .registry()
        .get(LIST_DIR)
        .unwrap()
        .definition_hash
        .to_string();
    for search in &searches {
        assert_eq!(search["tools"][0]["tool"], LIST_DIR);
        assert_eq!(search["tools"][0]["definition_sha256"], hash.as_str());
        assert_eq!(search["query_sha256"].as_str().unwrap().len(), 64);
        assert!(search.get("query").is_none());
    }
    // Three providers list the found tools: each is a load.
    let loads = lines.iter().filter(|l| l["event"] == "load").count();
    assert_eq!(loads, 3);
    let calls = lines
        .iter()
        .filter(|l| l.get("event").is_none() && l["tool"] == LIST_DIR)
        .count();
    assert_eq!(calls, 5);
}

#[tokio::test]
async fn bad_searches_are_answered_with_what_was_wrong_and_nothing_runs() {
    let (host, _dir) = host(SearchForm::Host, None).await;
    let request = host.offer(Provider::Anthropic);
    for (input, expected) in [
        (json!({"query": ""}), "the search was refused"),
        (json!({"query": "x".repeat(600)}), "the search was refused"),
        (json!({"query": "list", "limit": 50}), "1 to 20"),
        (json!({"query": 7}), "invalid_arguments"),
        (json!({"query": "list", "path": "/"}), "invalid_arguments"),
        (json!({}), "invalid_arguments"),
    ] {
        let response = search_response(Provider::Anthropic, &input);
        let turn = host.run_calls(&request, &response).await.unwrap();
        assert!(turn.found.is_empty(), "{input}");
        assert!(turn.any_error(), "{input}");
        let result = &turn.results[0]["content"][0];
        assert_eq!(result["is_error"], true);
        let text = result["content"].as_str().unwrap();
        assert!(text.contains(expected), "{input}: {text}");
    }

    // A model that calls a deferred tool it never searched for: it runs,
    // as it is registered.
    let list_dir = wire(&request, LIST_DIR);
    let turn = host
        .run_calls(&request, &call_response(Provider::Anthropic, &list_dir))
        .await
        .unwrap();
    assert!(!turn.any_error(), "{:?}", turn.outcomes);

    // The provider's own search naming a tool this request did not defer.
    let (host, _dir) = host_with(SearchForm::Provider).await;
    let request = host.offer(Provider::Anthropic);
    let hello = request
        .codec
        .iter()
        .find(|(name, _)| name.starts_with("hello/"))
        .map(|(_, wire)| wire.to_owned())
        .unwrap();
    for (named, expected) in [
        (hello.clone(), "hello/"),
        ("nothing__here".to_owned(), "nothing__here"),
    ] {
        let response = json!({"content": [
            {"type": "server_tool_use", "id": "srv1", "name": "tool_search_tool_bm25", "input": {"query": "x"}},
            {"type": "tool_search_tool_result", "tool_use_id": "srv1", "content": {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": named}]}},
            {"type": "tool_use", "id": "c1", "name": list_dir, "input": {}}
        ]});
        let error = host.run_calls(&request, &response).await.unwrap_err();
        assert!(matches!(error, TurnError::NotDeferred { .. }), "{error}");
        assert!(error.to_string().contains(expected), "{error}");
    }
    // What the provider's search found is kept for the next offer.
    let response = json!({"content": [
        {"type": "tool_search_tool_result", "tool_use_id": "srv1", "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": list_dir}]}},
    ]});
    let turn = host.run_calls(&request, &response).await.unwrap();
    assert_eq!(turn.found, [LIST_DIR]);
    // A client search call where the host offers none is refused.
    let request = host.offer(Provider::OpenAiResponses);
    let turn = host
        .run_calls(
            &request,
            &search_response(Provider::OpenAiResponses, &json!({"query": "list"})),
        )
        .await
        .unwrap();
    assert_eq!(
        turn.outcomes[0].result.as_ref().unwrap_err().code(),
        "unknown_tool"
    );
}

/// `provider`'s response calling the host's search with `input`.
fn search_response(provider: Provider, input: &Value) -> Value {
    call_of(provider, "s1", SEARCH_TOOL, input)
}

/// `provider`'s response calling `wire` on `.`.
fn call_response(provider: Provider, wire: &str) -> Value {
    call_of(provider, "c1", wire, &json!({"path": "."}))
}

fn call_of(provider: Provider, id: &str, name: &str, input: &Value) -> Value {
    match provider {
        Provider::OpenAiChat => {
            json!({"choices": [{"message": {"role": "assistant", "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()}}
            ]}}]})
        }
        Provider::OpenAiResponses if name == SEARCH_TOOL => json!({"output": [
            {"type": "tool_search_call", "id": "ts_1", "call_id": id, "execution": "client",
             "status": "completed", "arguments": input}
        ]}),
        Provider::OpenAiResponses => json!({"output": [
            {"type": "function_call", "call_id": id, "name": name, "arguments": input.to_string()}
        ]}),
        Provider::Anthropic => json!({"content": [
            {"type": "tool_use", "id": id, "name": name, "input": input}
        ]}),
        Provider::Gemini => json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"id": id, "name": name, "args": input}}
        ]}}]}),
        Provider::Bedrock => json!({"output": {"message": {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": id, "name": name, "input": input}}
        ]}}}),
        _ => unreachable!("no such provider here"),
    }
}
