//! Search clients (`[serve.clients.NAME] search = true`): listed
//! `search_tools`, `call_tool` and their `always` tools; a search finds
//! only tools of the client's set, `call_tool` runs one as a direct call
//! would, a 2025-11-25 session lists what it found, and every search is
//! journaled. Driven here over stdio line by line (each notification
//! seen in its place before an answer); [`sdk`] drives them with the
//! Python SDK's client.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use super::super::{fs_wasm, one_error_line, run_in, sandbox, shared_cache};

mod sdk;

/// A config of `fs` (a read-only `work/` holding `hello.txt`) and the
/// `hello` plugin as `p`, with `extra` after them.
fn two_plugins(extra: &str) -> tempfile::TempDir {
    let dir = sandbox();
    let config = dir.path().join("tiny-harness.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let hello = fs_wasm().with_file_name("hello.wasm");
    std::fs::write(
        &config,
        format!(
            "{text}[plugins.p]\npath = {:?}\n{extra}",
            hello.display().to_string()
        ),
    )
    .unwrap();
    dir
}

/// The stdio client of [`two_plugins`]: a search client over the `fs`
/// tools, `stat` listed directly, `read_file` renamed.
const SEARCH_STDIO: &str = "[serve.clients.stdio]\ntools = [\"fs/*\"]\nsearch = true\n\
                            always = [\"fs/workspace.stat\"]\n\
                            rename = { read = \"fs/workspace.read_file\" }\n";

/// `serve` over stdio, driven one request at a time.
struct Session {
    child: Child,
    input: ChildStdin,
    lines: mpsc::Receiver<String>,
    next: u64,
    /// `_meta` for a stateless (2026-07-28) request; `None` in a session.
    meta: Option<Value>,
}

impl Session {
    /// `serve` in `dir` with `extra` arguments, its log in `dir/serve.log`.
    fn start(dir: &Path, extra: &[&str]) -> Session {
        let log = std::fs::File::create(dir.join("serve.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
            .arg("serve")
            .args(extra)
            .current_dir(dir)
            .env("TINY_HARNESS_CACHE_DIR", shared_cache())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            while output.read_line(&mut line).is_ok_and(|n| n > 0) {
                if send.send(std::mem::take(&mut line)).is_err() {
                    return;
                }
            }
        });
        Session {
            child,
            input,
            lines,
            next: 1,
            meta: None,
        }
    }

    /// A 2025-11-25 session: `initialize`, then `initialized`.
    fn initialized(dir: &Path, extra: &[&str]) -> Session {
        let mut session = Session::start(dir, extra);
        let (answer, _) = session.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "search-test", "version": "1"}}),
        );
        assert_eq!(answer["protocolVersion"], "2025-11-25", "{answer}");
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    /// Stateless requests (2026-07-28), no session.
    fn stateless(dir: &Path, extra: &[&str]) -> Session {
        let mut session = Session::start(dir, extra);
        session.meta = Some(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }));
        session
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// Sends `method` with `params` and waits for its answer: the result,
    /// and the methods of the notifications that came before it.
    fn request(&mut self, method: &str, mut params: Value) -> (Value, Vec<String>) {
        let id = self.next;
        self.next += 1;
        if let Some(meta) = &self.meta {
            params["_meta"] = meta.clone();
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut notified = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no answer to {method} within 60 s"));
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return (message["result"].clone(), notified);
            }
            if let Some(method) = message["method"].as_str() {
                notified.push(method.to_owned());
            }
        }
    }

    /// The names `tools/list` gives.
    fn list(&mut self) -> Vec<String> {
        let (answer, _) = self.request("tools/list", json!({}));
        names(&answer["tools"])
    }

    /// `tools/call` of `name` with `arguments`: the result, and whether
    /// the tool list was said to change before it.
    fn call(&mut self, name: &str, arguments: Value) -> (Value, bool) {
        let (result, notified) =
            self.request("tools/call", json!({"name": name, "arguments": arguments}));
        let changed = notified
            .iter()
            .any(|m| m == "notifications/tools/list_changed");
        (result, changed)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `name` of each tool of a listing or of `search_tools`' answer.
fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap_or_else(|| panic!("not a list of tools: {tools}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// `text` with its untrusted block's nonce and call id made the same for
/// every call.
fn without_ids(text: &str) -> String {
    let mut text = text.to_owned();
    if let Some(at) = text.find("<tool-result-") {
        let nonce = text[at + 13..at + 45].to_owned();
        text = text.replace(&nonce, "NONCE");
    }
    if let Some(at) = text.find(" call=\"") {
        let end = at + 7 + text[at + 7..].find('"').unwrap();
        text.replace_range(at..=end, " call=ID");
    }
    text
}

/// A call's MCP result with its blocks' nonces and call ids made the
/// same: what two runs of one tool with the same arguments share.
fn comparable(result: &Value) -> Value {
    let mut result = result.clone();
    for item in result["content"].as_array_mut().unwrap() {
        if let Some(text) = item["text"].as_str() {
            item["text"] = json!(without_ids(text));
        }
    }
    result
}

fn sha256(text: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// The journal's lines.
fn journal(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn a_search_client_lists_its_own_tools_finds_only_its_set_and_calls_what_it_found() {
    // The host's own `[search] always` counts as the client's `always`.
    let dir = two_plugins(&format!(
        "[search]\nalways = [\"fs/workspace.list_dir\"]\n{SEARCH_STDIO}"
    ));
    let journal_path = dir.path().join("calls.jsonl");
    let mut session =
        Session::initialized(dir.path(), &["--journal", journal_path.to_str().unwrap()]);

    // Its own two tools, then its `always` tools in registry-name order.
    let (listing, _) = session.request("tools/list", json!({}));
    let fixed = [
        "search_tools",
        "call_tool",
        "fs__workspace.list_dir",
        "fs__workspace.stat",
    ];
    assert_eq!(names(&listing["tools"]), fixed, "{listing}");
    let search_tool = &listing["tools"][0];
    assert_eq!(search_tool["inputSchema"]["required"], json!(["query"]));
    assert_eq!(
        search_tool["inputSchema"]["properties"]["limit"]["maximum"],
        20
    );
    assert_eq!(
        search_tool["outputSchema"]["required"],
        json!(["tools"]),
        "{search_tool}"
    );
    assert_eq!(
        search_tool["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})
    );
    assert_eq!(
        listing["tools"][1]["inputSchema"]["required"],
        json!(["name"])
    );

    // A search finds the renamed tool under the client's name, with its
    // schema; the session is told its list changed, before the answer.
    let query = "read the lines of a text file";
    let (found, changed) = session.call("search_tools", json!({"query": query}));
    assert_eq!(found["isError"], false, "{found}");
    assert!(changed, "no list_changed before the answer: {found}");
    let tools = &found["structuredContent"]["tools"];
    let first = names(tools);
    assert_eq!(first[0], "read", "{found}");
    assert!(
        tools[0]["description"]
            .as_str()
            .unwrap()
            .starts_with("Reads lines"),
        "{found}"
    );
    assert!(tools[0]["inputSchema"]["properties"]["path"].is_object());
    // The text is the same JSON.
    let text: Value = serde_json::from_str(found["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, found["structuredContent"]);
    // Never a tool listed directly, never one outside the set.
    for name in &first {
        assert!(!fixed.contains(&name.as_str()), "{found}");
        assert!(name == "read" || name.starts_with("fs__"), "{found}");
    }
    let greet = "greet someone by name";
    let (outside, _) = session.call("search_tools", json!({"query": greet, "limit": 20}));
    let second = names(&outside["structuredContent"]["tools"]);
    assert!(
        second.iter().all(|n| n == "read" || n.starts_with("fs__")),
        "{outside}"
    );
    assert!(!second.contains(&"p__hello.greet".to_owned()));

    // The session lists what it found after its fixed tools, in the order
    // found; the same search again changes nothing, and says nothing.
    let mut expected: Vec<String> = fixed.iter().map(|n| n.to_string()).collect();
    for name in first.iter().chain(&second) {
        if !expected.contains(name) {
            expected.push(name.clone());
        }
    }
    assert_eq!(session.list(), expected);
    let (again, changed) = session.call("search_tools", json!({"query": query}));
    assert_eq!(again["structuredContent"], found["structuredContent"]);
    assert!(!changed);

    // `call_tool` runs a found tool exactly as a direct call of it does.
    let through = session
        .call(
            "call_tool",
            json!({"name": "read", "arguments": {"path": "hello.txt"}}),
        )
        .0;
    let direct = session.call("read", json!({"path": "hello.txt"})).0;
    assert_eq!(through["isError"], false, "{through}");
    assert!(
        through["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello from the workspace")
    );
    assert_eq!(comparable(&through), comparable(&direct));
    // Without arguments it is the tool's own refusal, as a direct call's.
    let bare = session.call("call_tool", json!({"name": "read"})).0;
    assert_eq!(bare["_meta"]["io.tiny-harness/code"], "invalid_arguments");
    assert_eq!(
        comparable(&bare),
        comparable(&session.call("read", json!({})).0)
    );
    // A tool outside the set: the same refusal as a direct call of it,
    // and nothing runs.
    let hidden = session
        .call(
            "call_tool",
            json!({"name": "p__hello.greet", "arguments": {"name": "Ada"}}),
        )
        .0;
    assert_eq!(hidden["_meta"]["io.tiny-harness/code"], "unknown_tool");
    assert_eq!(
        comparable(&hidden),
        comparable(&session.call("p__hello.greet", json!({"name": "Ada"})).0)
    );
    // `call_tool` does not name itself.
    let itself = session
        .call("call_tool", json!({"name": "call_tool", "arguments": {}}))
        .0;
    assert_eq!(itself["_meta"]["io.tiny-harness/code"], "unknown_tool");

    // The journal: each search with the query's hash and what it found
    // (definition hashes as the calls record them); `call_tool`'s call
    // under the real tool; nothing of the refused ones.
    let lines = journal(&journal_path);
    let searches: Vec<&Value> = lines.iter().filter(|l| l["event"] == "search").collect();
    assert_eq!(searches.len(), 3, "{lines:?}");
    assert_eq!(searches[0]["query_sha256"], sha256(query));
    assert_eq!(searches[1]["query_sha256"], sha256(greet));
    assert_eq!(searches[0]["client"], "stdio");
    assert!(searches[0].get("query").is_none());
    let found_read = &searches[0]["tools"][0];
    assert_eq!(found_read["tool"], "fs/workspace.read_file", "{lines:?}");
    assert_eq!(searches[0]["tools"].as_array().unwrap().len(), first.len());
    let calls: Vec<&Value> = lines.iter().filter(|l| l.get("event").is_none()).collect();
    let ran: Vec<&str> = calls.iter().map(|l| l["tool"].as_str().unwrap()).collect();
    assert!(!ran.contains(&"p/hello.greet"), "{lines:?}");
    let via = calls[0];
    assert_eq!(via["tool"], "fs/workspace.read_file", "{via}");
    assert_eq!(via["wire_name"], "read");
    assert_eq!(via["client"], "stdio");
    assert_eq!(via["outcome"], "ok");
    assert_eq!(via["definition_sha256"], found_read["definition_sha256"]);
    let log = std::fs::read_to_string(dir.path().join("serve.log")).unwrap();
    assert!(log.contains("tool=\"read\" via=\"call_tool\""), "{log}");
    assert!(log.contains("tool=\"search_tools\" found="), "{log}");
}

#[test]
fn a_stateless_search_client_lists_only_its_fixed_tools() {
    let dir = two_plugins(SEARCH_STDIO);
    let mut stateless = Session::stateless(dir.path(), &[]);
    let fixed = ["search_tools", "call_tool", "fs__workspace.stat"];
    assert_eq!(stateless.list(), fixed);
    let (found, changed) = stateless.call("search_tools", json!({"query": "write a file"}));
    assert_eq!(
        names(&found["structuredContent"]["tools"])[0],
        "fs__workspace.write_file"
    );
    assert!(!changed);
    // No session keeps what it found.
    assert_eq!(stateless.list(), fixed);
    let (stat, _) = stateless.call(
        "call_tool",
        json!({"name": "fs__workspace.stat", "arguments": {"path": "hello.txt"}}),
    );
    assert_eq!(stat["isError"], false, "{stat}");
}

#[test]
fn a_search_clients_bad_queries_limits_and_arguments_are_refused_and_run_nothing() {
    let dir = two_plugins(SEARCH_STDIO);
    let journal_path = dir.path().join("calls.jsonl");
    let mut session =
        Session::initialized(dir.path(), &["--journal", journal_path.to_str().unwrap()]);
    // A query the search refuses: a tool error saying what to change.
    let long = "file ".repeat(120);
    for (query, says) in [
        ("", "the query is empty"),
        ("   ", "the query is empty"),
        (long.as_str(), "the query is 600 bytes, more than 512"),
        ("read\u{0}file", "control character U+0000"),
    ] {
        let (result, changed) = session.call("search_tools", json!({"query": query}));
        assert_eq!(result["isError"], true, "{result}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(says), "{query:?}: {text}");
        assert!(!text.contains('\n'), "{text}");
        assert!(result.get("structuredContent").is_none());
        assert!(!changed);
    }
    // Arguments the tools' schemas refuse: `invalid_arguments`.
    for (tool, arguments) in [
        ("search_tools", json!({"query": "read", "limit": 0})),
        ("search_tools", json!({"query": "read", "limit": 21})),
        ("search_tools", json!({"query": "read", "limit": "5"})),
        ("search_tools", json!({"query": "read", "limit": 2.5})),
        ("search_tools", json!({"query": 7})),
        ("search_tools", json!({"limit": 5})),
        ("search_tools", json!({"query": "read", "and": "more"})),
        (
            "call_tool",
            json!({"name": "read", "arguments": "{\"path\": \"hello.txt\"}"}),
        ),
        (
            "call_tool",
            json!({"name": "read", "arguments": ["hello.txt"]}),
        ),
        ("call_tool", json!({"name": "read", "arguments": null})),
        ("call_tool", json!({"arguments": {"path": "hello.txt"}})),
        ("call_tool", json!({"name": 3, "arguments": {}})),
    ] {
        let (result, _) = session.call(tool, arguments.clone());
        assert_eq!(result["isError"], true, "{arguments}: {result}");
        assert_eq!(
            result["_meta"]["io.tiny-harness/code"], "invalid_arguments",
            "{tool} {arguments}: {result}"
        );
    }
    // A limit the schema admits.
    let (two, _) = session.call("search_tools", json!({"query": "file", "limit": 2}));
    assert_eq!(
        two["structuredContent"]["tools"].as_array().unwrap().len(),
        2
    );
    // Nothing ran, and only the good search was journaled.
    let lines = journal(&journal_path);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["event"], "search");
    assert_eq!(lines[0]["query_sha256"], sha256("file"));
}

#[test]
fn search_client_configs_that_would_mislead_are_refused_at_start_in_one_line() {
    for (extra, says) in [
        (
            "[serve.clients.stdio]\nsearch = true\nrename = { call_tool = \"fs/workspace.stat\" }\n",
            &[
                "clients.stdio.rename",
                "\"call_tool\" is the name of a search client's own tool",
            ][..],
        ),
        (
            "[serve.clients.ci]\nsearch = true\nrename = { search_tools = \"fs/workspace.search\" }\n",
            &["clients.ci.rename", "\"search_tools\""][..],
        ),
        (
            "[serve.clients.stdio]\nalways = [\"fs/workspace.stat\"]\n",
            &["clients.stdio.always", "add search = true"][..],
        ),
        (
            "[serve.clients.stdio]\ntools = [\"fs/*\"]\nsearch = true\nalways = [\"p/*\"]\n",
            &["clients.stdio: always: \"p/*\" matches no tool of this client's set"][..],
        ),
    ] {
        let dir = two_plugins(extra);
        one_error_line(&run_in(dir.path(), &["serve"], None), says);
    }
    // A search client whose set is all `always`: allowed, finds nothing.
    let dir = two_plugins(
        "[serve.clients.stdio]\ntools = [\"fs/*.stat\"]\nsearch = true\nalways = [\"fs/*\"]\n",
    );
    let mut session = Session::initialized(dir.path(), &[]);
    assert_eq!(
        session.list(),
        ["search_tools", "call_tool", "fs__workspace.stat"]
    );
    let (none, changed) = session.call("search_tools", json!({"query": "describe a file"}));
    assert_eq!(none["structuredContent"], json!({"tools": []}), "{none}");
    assert!(!changed);
}
