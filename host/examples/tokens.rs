//! How many tokens the tool definitions of one request take, with and
//! without deferral, for each provider: a markdown table on stdout.
//!
//! ```sh
//! cargo run --release -p tiny-harness-host --features token-count --example tokens -- \
//!     CONFIG [--encoding o200k_base|cl100k_base] [--query "read a file"] [--intrinsics]
//! ```
//!
//! The host is built from `CONFIG` once per setting: nothing deferred (the
//! config's own `[search]` aside), the MCP servers' tools deferred
//! (`mcp/*`), and every tool deferred (`*`); with deferral, once with the
//! host's search (`form = "host"`) and once with the provider's
//! (`"provider"`, which only Anthropic and OpenAI Responses have). Each
//! request's tools payload is counted as sent (`request.tools.to_string()`)
//! with OpenAI's tokenizer (tiktoken-rs; `o200k_base` unless
//! `--encoding` says otherwise), and so is what of it reaches the model's
//! context before any search: Anthropic does not load the entries marked
//! `defer_loading`, and OpenAI Responses shows a namespace of deferred
//! functions by its name and description only. These are counts of the
//! JSON text: each provider renders tool definitions its own way (and
//! Anthropic and Gemini tokenize with tokenizers of their own), so compare
//! the rows with each other, not with a provider's bill.
//!
//! With the host's search, one search is run too (a `search_tools` call
//! of the provider's form asking for `--query`, at most 5 tools): the
//! tokens of the tool-result message(s) the host builds (the median of 9
//! runs: each result's tags carry a random nonce), and of the
//! definitions the found tools then bring into the context (appended to
//! the next request for Chat Completions, Gemini and Bedrock; loaded by
//! Anthropic from their `defer_loading` entries; inside the
//! `tool_search_output` for Responses, so already in the result).
//!
//! `--intrinsics` adds the twelve intrinsic tools, as `tiny-harness`
//! itself does; without it the registry is the config's plugins alone.
//!
//! A config with the bundled plugins and two npm MCP servers (the
//! servers as `tests/mcp` installs them; the first load writes
//! `tokens.lock` beside it, so keep it in a directory of its own, with
//! `work/` and `root/` made there):
//!
//! ```toml
//! [plugins.fs]
//! path = "builtin:fs"
//! [plugins.fs.grants]
//! dirs = [{ host = "work", guest = "/workspace", mode = "read-write" }]
//!
//! [plugins.shell]
//! path = "builtin:shell"
//! [plugins.shell.grants]
//! exec = [{ program = "git" }]
//! dirs = [{ host = "work", guest = "/workspace", mode = "read-write" }]
//!
//! [plugins.net]
//! path = "builtin:net"
//! [plugins.net.grants]
//! net = ["https://*.wikipedia.org"]
//!
//! [plugins.mcp]
//! path = "builtin:mcp"
//! [plugins.mcp.grants]
//! exec = [{ program = "node", read = ["/path/to/checkout/tests/mcp"] }]
//! dirs = [{ host = "/abs/dir/root", guest = "/abs/dir/root", mode = "read-only" }]
//!
//! [plugins.mcp.config.mcpServers.everything]
//! command = "node"
//! args = ["/path/to/checkout/tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]
//!
//! [plugins.mcp.config.mcpServers.files]
//! command = "node"
//! args = ["/path/to/checkout/tests/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/abs/dir/root"]
//! ```
//!
//! (`tiny-harness mcp add everything -- node .../server-everything/dist/index.js stdio`
//! writes the `mcp` part, grants included.)

// An example that cannot set up has nothing to show: it stops at once,
// saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::error::Error;
use std::path::PathBuf;

use serde_json::{Value, json};
use tiktoken_rs::CoreBPE;
use tiny_harness_host::{
    Config, EncodedRequest, Host, HostBuilder, PluginEngine, Provider, SEARCH_TOOL, SearchForm,
    ToolPattern,
};

/// The providers measured (MCP's listing has no deferral of its own).
const PROVIDERS: [Provider; 5] = [
    Provider::OpenAiChat,
    Provider::OpenAiResponses,
    Provider::Anthropic,
    Provider::Gemini,
    Provider::Bedrock,
];

/// How many tools the measured search asks for.
const FOUND: usize = 5;

/// How many times the search is run (the median is shown).
const SEARCH_RUNS: usize = 9;

/// One way of building the host.
struct Setting {
    /// The pattern deferred, if any.
    defer: Option<&'static str>,
    /// Who searches.
    form: SearchForm,
}

const SETTINGS: [Setting; 5] = [
    Setting {
        defer: None,
        form: SearchForm::Host,
    },
    Setting {
        defer: Some("mcp/*"),
        form: SearchForm::Host,
    },
    Setting {
        defer: Some("mcp/*"),
        form: SearchForm::Provider,
    },
    Setting {
        defer: Some("*"),
        form: SearchForm::Host,
    },
    Setting {
        defer: Some("*"),
        form: SearchForm::Provider,
    },
];

/// What the command line asks.
struct Args {
    config: PathBuf,
    encoding: String,
    query: String,
    intrinsics: bool,
}

fn args() -> Result<Args, Box<dyn Error>> {
    let mut config = None;
    let mut encoding = "o200k_base".to_owned();
    let mut query = "read a file".to_owned();
    let mut intrinsics = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--encoding" => encoding = args.next().ok_or("--encoding needs a name")?,
            "--query" => query = args.next().ok_or("--query needs words")?,
            "--intrinsics" => intrinsics = true,
            _ if config.is_none() && !arg.starts_with("--") => config = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument {arg:?}").into()),
        }
    }
    Ok(Args {
        config: config
            .ok_or("usage: tokens CONFIG [--encoding NAME] [--query WORDS] [--intrinsics]")?,
        encoding,
        query,
        intrinsics,
    })
}

/// Counts tokens of text.
struct Counter(&'static CoreBPE);

impl Counter {
    fn new(encoding: &str) -> Result<Counter, Box<dyn Error>> {
        Ok(Counter(match encoding {
            "o200k_base" => tiktoken_rs::o200k_base_singleton(),
            "cl100k_base" => tiktoken_rs::cl100k_base_singleton(),
            _ => {
                return Err(
                    format!("unknown encoding {encoding:?}: o200k_base or cl100k_base").into(),
                );
            }
        }))
    }

    fn text(&self, text: &str) -> usize {
        self.0.encode_ordinary(text).len()
    }

    fn value(&self, value: &Value) -> usize {
        self.text(&value.to_string())
    }
}

/// What one request offers, counted.
struct Offer {
    /// Tools whose whole definition is in the context from the start.
    listed: usize,
    /// Tools deferred.
    deferred: usize,
    /// Whether the deferred tools' definitions are sent (not loaded).
    deferred_sent: bool,
    /// The payload's tokens, as sent.
    sent: usize,
    /// The tokens of what of it is in the model's context.
    context: usize,
    /// The search tool's own entry, if offered.
    search_tool: Option<usize>,
}

/// Whether `entry` is the search itself (the host's `search_tools` or a
/// provider's tool search).
fn is_search(entry: &Value, search_wire: Option<&str>) -> bool {
    let kind = entry.get("type").and_then(Value::as_str).unwrap_or("");
    if kind.starts_with("tool_search") {
        return true;
    }
    let name = entry
        .get("name")
        .or_else(|| entry.pointer("/function/name"))
        .or_else(|| entry.pointer("/toolSpec/name"))
        .and_then(Value::as_str);
    name.is_some() && name == search_wire
}

fn defers_loading(entry: &Value) -> bool {
    entry.get("defer_loading") == Some(&Value::Bool(true))
}

/// The payload as the model's context holds it before any search:
/// Anthropic's `defer_loading` entries left out, and each Responses
/// namespace of deferred functions reduced to its name and description.
fn in_context(provider: Provider, payload: &Value) -> Value {
    let Some(entries) = payload.as_array() else {
        return payload.clone();
    };
    if !matches!(provider, Provider::Anthropic | Provider::OpenAiResponses) {
        return payload.clone();
    }
    let kept = entries
        .iter()
        .filter(|entry| !defers_loading(entry))
        .map(|entry| {
            let functions = entry.get("tools").and_then(Value::as_array);
            let namespace = entry.get("type").and_then(Value::as_str) == Some("namespace");
            match functions {
                Some(functions) if namespace && functions.iter().all(defers_loading) => json!({
                    "type": "namespace",
                    "name": entry["name"],
                    "description": entry["description"],
                }),
                _ => entry.clone(),
            }
        })
        .collect();
    Value::Array(kept)
}

fn count_offer(counter: &Counter, request: &EncodedRequest) -> Offer {
    let search_wire = request.codec.encode(SEARCH_TOOL);
    let mut listed = 0;
    let mut search_tool = None;
    for entry in request.entries() {
        if request.search.is_some() && is_search(entry, search_wire) {
            search_tool = Some(counter.value(entry));
        } else if entry.get("type").and_then(Value::as_str) == Some("namespace") {
            let functions = entry["tools"].as_array().map_or(&[][..], Vec::as_slice);
            listed += functions.iter().filter(|f| !defers_loading(f)).count();
        } else if !defers_loading(entry) {
            listed += 1;
        }
    }
    let deferred = request.search.as_ref().map_or(0, |s| s.deferred);
    let sent_text = request.tools.to_string();
    let context = in_context(request.provider, request.tools.as_value());
    Offer {
        listed,
        deferred,
        deferred_sent: deferred > 0
            && (request.provider == Provider::Anthropic
                || request
                    .entries()
                    .iter()
                    .any(|e| e.get("type").and_then(Value::as_str) == Some("namespace"))),
        sent: counter.text(&sent_text),
        context: counter.value(&context),
        search_tool,
    }
}

/// A response of `provider` whose one call is a search of the host's.
fn search_response(provider: Provider, wire: &str, query: &str) -> Value {
    let arguments = json!({ "query": query, "limit": FOUND });
    match provider {
        Provider::OpenAiChat => json!({
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [{
                        "id": "call_search",
                        "type": "function",
                        "function": { "name": wire, "arguments": arguments.to_string() }
                    }]
                },
                "finish_reason": "tool_calls"
            }]
        }),
        Provider::OpenAiResponses => json!({
            "output": [{
                "type": "tool_search_call",
                "id": "ts_search",
                "call_id": "call_search",
                "execution": "client",
                "arguments": arguments,
                "status": "completed"
            }]
        }),
        Provider::Anthropic => json!({
            "type": "message",
            "role": "assistant",
            "content": [{ "type": "tool_use", "id": "toolu_search", "name": wire, "input": arguments }],
            "stop_reason": "tool_use"
        }),
        Provider::Gemini => json!({
            "candidates": [{
                "content": { "role": "model", "parts": [{ "functionCall": { "name": wire, "args": arguments } }] },
                "finishReason": "STOP"
            }]
        }),
        _ => json!({
            "output": { "message": { "role": "assistant", "content": [
                { "toolUse": { "toolUseId": "tooluse_search", "name": wire, "input": arguments } }
            ] } },
            "stopReason": "tool_use"
        }),
    }
}

/// One search of the host's, counted: the tokens of the result
/// message(s), the tokens of the definitions it brings into the context,
/// and how many tools it found.
async fn count_search(
    counter: &Counter,
    host: &Host,
    request: &EncodedRequest,
    query: &str,
) -> Result<(usize, usize, usize), Box<dyn Error>> {
    let wire = request.codec.encode(SEARCH_TOOL).unwrap_or(SEARCH_TOOL);
    let response = search_response(request.provider, wire, query);
    // A rendered result's tags carry a fresh random nonce, whose hex
    // digits take a few tokens more or less each time: the median of
    // several runs.
    let mut results = Vec::new();
    let mut last = None;
    for _ in 0..SEARCH_RUNS {
        host.begin_iteration();
        let turn = host.run_calls(request, &response).await?;
        if let Some(outcome) = turn.outcomes.iter().find(|o| o.is_error()) {
            return Err(format!(
                "{}: the search failed: {}",
                request.provider,
                outcome.render()
            )
            .into());
        }
        results.push(counter.value(&Value::Array(turn.results.clone())));
        last = Some(turn);
    }
    let turn = last.ok_or("no search ran")?;
    if request.provider == Provider::OpenAiChat {
        eprintln!("{query:?} found: {}", turn.found.join(", "));
    }
    results.sort_unstable();
    let result = results[results.len() / 2];
    let before = counter.value(&in_context(request.provider, request.tools.as_value()));
    let loaded = match request.provider {
        // Anthropic loads each found tool from its `defer_loading` entry.
        Provider::Anthropic => turn
            .found
            .iter()
            .filter_map(|name| {
                let wire = request.codec.encode(name)?;
                let entry = request
                    .entries()
                    .into_iter()
                    .find(|e| e.get("name").and_then(Value::as_str) == Some(wire))?
                    .clone();
                let mut entry = entry;
                entry.as_object_mut()?.remove("defer_loading");
                Some(counter.value(&entry))
            })
            .sum(),
        // The definitions are in the `tool_search_output` itself.
        Provider::OpenAiResponses => 0,
        // The next request lists the found tools after the search.
        _ => {
            let next = host.offer_next(request, &turn);
            counter
                .value(&in_context(next.provider, next.tools.as_value()))
                .saturating_sub(before)
        }
    };
    Ok((result, loaded, turn.found.len()))
}

async fn build(
    config: &Config,
    setting: &Setting,
    engine: Option<&PluginEngine>,
    intrinsics: bool,
) -> Result<Host, Box<dyn Error>> {
    let mut builder = HostBuilder::new().config(config).search_form(setting.form);
    if let Some(engine) = engine {
        builder = builder.engine(engine.clone());
    }
    if let Some(pattern) = setting.defer {
        builder = builder.defer(ToolPattern::new(pattern)?);
    }
    #[cfg(feature = "intrinsics")]
    {
        builder = builder.intrinsics(intrinsics);
    }
    #[cfg(not(feature = "intrinsics"))]
    if intrinsics {
        return Err("--intrinsics needs the intrinsics feature".into());
    }
    Ok(builder.build().await?)
}

/// `n` with thousands separated by commas.
fn num(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let args = args()?;
    let counter = Counter::new(&args.encoding)?;
    let config = Config::load(&args.config)?;
    if !config.search.is_empty() {
        eprintln!(
            "note: {} defers tools itself ([search]); every setting below adds to it",
            args.config.display()
        );
    }

    let mut engine: Option<PluginEngine> = None;
    let mut rows = Vec::new();
    let mut search_tool: BTreeMap<String, usize> = BTreeMap::new();
    for setting in &SETTINGS {
        let host = build(&config, setting, engine.as_ref(), args.intrinsics).await?;
        if engine.is_none() {
            engine = Some(host.engine().clone());
            print_registry(&host);
        }
        for provider in PROVIDERS {
            let native = matches!(provider, Provider::Anthropic | Provider::OpenAiResponses);
            // Without deferral the form does nothing; the others have no
            // search of their own, so "provider" is "host" for them.
            if setting.form != SearchForm::Host && !native {
                continue;
            }
            let request = host.offer(provider);
            let offer = count_offer(&counter, &request);
            if let Some(tokens) = offer.search_tool {
                let form = request.search.as_ref().map_or(SearchForm::Host, |s| s.form);
                search_tool.insert(format!("{provider} ({})", form.as_str()), tokens);
            }
            let search = match &request.search {
                Some(search) if search.by_host() => {
                    let (result, loaded, found) =
                        count_search(&counter, &host, &request, &args.query).await?;
                    if provider == Provider::OpenAiResponses {
                        format!("{} ({found} definitions in it)", num(result))
                    } else {
                        format!("{} + {} for {found} definitions", num(result), num(loaded))
                    }
                }
                Some(_) => "(the provider's)".to_owned(),
                None => "".to_owned(),
            };
            rows.push(format!(
                "| {provider} | {} | {} | {} | {} | {} | {} | {search} |",
                setting
                    .defer
                    .map_or("none".to_owned(), |p| format!("`{p}`")),
                if setting.defer.is_some() {
                    request.search.as_ref().map_or("", |s| s.form.as_str())
                } else {
                    ""
                },
                offer.listed,
                match (offer.deferred, offer.deferred_sent) {
                    (0, _) => "0".to_owned(),
                    (n, true) => format!("{n} (sent, not loaded)"),
                    (n, false) => format!("{n} (not sent)"),
                },
                num(offer.sent),
                num(offer.context),
            ));
        }
        host.shutdown().await;
    }

    println!(
        "\nTokens ({} via tiktoken-rs) of the tools payload of one request:\n",
        args.encoding
    );
    println!(
        "| provider | deferred | search | tools listed | tools deferred | tokens sent | tokens in context | one search ({FOUND} tools for {:?}): result + definitions loaded |",
        args.query
    );
    println!("|---|---|---|---:|---|---:|---:|---|");
    for row in rows {
        println!("{row}");
    }
    println!("\nThe search tool's own entry:\n");
    println!("| provider (form) | tokens |");
    println!("|---|---:|");
    for (provider, tokens) in search_tool {
        println!("| {provider} | {} |", num(tokens));
    }
    Ok(())
}

/// The registry's tools per plugin and server, on stdout.
fn print_registry(host: &Host) {
    let mut per_source: BTreeMap<String, usize> = BTreeMap::new();
    for tool in host.registry().tools() {
        let name = tool.name.as_str();
        let source = match (name.contains('/'), name.split_once('.')) {
            (true, Some((source, _))) => source.to_owned(),
            _ => "intrinsics".to_owned(),
        };
        *per_source.entry(source).or_default() += 1;
    }
    println!("Registry:\n\n| source | tools |\n|---|---:|");
    let mut total = 0;
    for (source, count) in per_source {
        total += count;
        println!("| `{source}` | {count} |");
    }
    println!("| all | {total} |");
    #[cfg(feature = "mcp")]
    for (plugin, source) in host.mcp_sources() {
        let status = source.status();
        eprintln!(
            "{plugin}/{}: {} ({} tools pinned)",
            source.server(),
            status.state,
            status.tools.len()
        );
    }
}
