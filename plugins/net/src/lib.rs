//! `net`: HTTP for the model, server `http`, through `wasi:http`.
//!
//! Two tools: `get` (a URL and headers; follows redirects) and `request`
//! (a method, a URL, headers and a text body; follows none). Both return a
//! line of text and then JSON `{url, status, headers, body, body_encoding,
//! truncated, redirects}`; `body` is text when the body is UTF-8, else
//! base64, and `truncated` says it was cut at `body_kib`. A status of 400
//! or more is an ordinary result marked as an error; a request the host
//! refuses is a `denied` call error whose message says what to grant.
//!
//! The config (`[plugins.<name>.config]`), every key optional:
//!
//! ```toml
//! body_kib = 256       # response body kept per result; default 256
//! max_redirects = 5    # redirects `get` follows; default 5, at most 20
//! ```
//!
//! Guarantees:
//! - The plugin decides nothing about what may be reached: the host checks
//!   every request, each redirect hop included, against the plugin's `net`
//!   grants, resolves the name itself, refuses loopback, private and other
//!   special addresses unless a grant names the host, and caps each
//!   response body and request time (`limits.http_*`).
//! - A result holds at most `body_kib` KiB of body (4/3 of that as
//!   base64), and `truncated` says when more was sent. Keep it below the
//!   host's `result_kib`, or a large body reaches the model as `too_large`.

mod defs;

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;
use tiny_harness_plugin::http;

/// Bindings generated from `wit/plugin.wit`. Clippy is silenced here only:
/// the generated export glue has a function with more arguments than it likes.
#[allow(clippy::too_many_arguments)]
mod bindings {
    wit_bindgen::generate!({ world: "plugin", path: "../../wit" });
}

use bindings::tiny_harness::plugin::types::{ContentPart, JsonData, ServerDefinition};
use bindings::{CallError, CallResult, Guest, Registration};

/// The server every tool of this plugin belongs to.
const SERVER: &str = "http";
/// The default for [`Config::body_kib`].
const DEFAULT_BODY_KIB: u32 = 256;
/// The largest [`Config::body_kib`]: the host's largest result limit.
const MAX_BODY_KIB: u32 = 65_536;
/// The default for [`Config::max_redirects`].
const DEFAULT_MAX_REDIRECTS: u32 = 5;
/// The largest [`Config::max_redirects`].
const MAX_REDIRECTS: u32 = 20;

/// The plugin's config: the host's `[plugins.<name>.config]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The most response body one result holds, in KiB.
    #[serde(default = "default_body_kib")]
    body_kib: u32,
    /// How many redirects `get` follows.
    #[serde(default = "default_max_redirects")]
    max_redirects: u32,
}

fn default_body_kib() -> u32 {
    DEFAULT_BODY_KIB
}

fn default_max_redirects() -> u32 {
    DEFAULT_MAX_REDIRECTS
}

impl Config {
    fn parse(config: &str) -> Result<Self, String> {
        let config: Config = serde_json::from_str(config).map_err(|err| {
            format!(
                "invalid net plugin config: {err}; its keys are `body_kib` (1 to \
                 {MAX_BODY_KIB}, default {DEFAULT_BODY_KIB}) and `max_redirects` (0 to \
                 {MAX_REDIRECTS}, default {DEFAULT_MAX_REDIRECTS})"
            )
        })?;
        if !(1..=MAX_BODY_KIB).contains(&config.body_kib) {
            return Err(format!(
                "invalid net plugin config: `body_kib` must be from 1 to {MAX_BODY_KIB}, not {}",
                config.body_kib
            ));
        }
        if config.max_redirects > MAX_REDIRECTS {
            return Err(format!(
                "invalid net plugin config: `max_redirects` must be from 0 to {MAX_REDIRECTS}, not {}",
                config.max_redirects
            ));
        }
        Ok(config)
    }
}

/// The arguments of `get` and `request`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    method: Option<String>,
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    body: Option<String>,
}

struct Net;

impl Guest for Net {
    fn register(config: String) -> Result<Registration, String> {
        Config::parse(&config)?;
        Ok(Registration {
            servers: vec![ServerDefinition {
                name: SERVER.into(),
                tools: defs::definitions(),
            }],
            mcp_sources: Vec::new(),
        })
    }

    fn call(
        config: String,
        server: String,
        tool: String,
        arguments: String,
    ) -> Result<CallResult, CallError> {
        let config = Config::parse(&config).map_err(CallError::Failed)?;
        if server != SERVER {
            return Err(CallError::UnknownTool(format!(
                "the net plugin has no server {server:?}; its only server is {SERVER:?}"
            )));
        }
        let args: Args = serde_json::from_str(&arguments)
            .map_err(|err| CallError::InvalidArguments(format!("bad arguments: {err}")))?;
        match tool.as_str() {
            "get" => run(&config, "GET", &args, config.max_redirects),
            "request" => {
                let method = args.method.clone().unwrap_or_else(|| "GET".into());
                run(&config, &method, &args, 0)
            }
            other => Err(CallError::UnknownTool(format!(
                "the {SERVER} server has no tool {other:?}; its tools are get and request"
            ))),
        }
    }
}

bindings::export!(Net with_types_in bindings);

/// Sends the request, following up to `redirects` redirects, and shapes
/// the last response as a result.
fn run(
    config: &Config,
    method: &str,
    args: &Args,
    redirects: u32,
) -> Result<CallResult, CallError> {
    if args.headers.len() > defs::MAX_HEADERS {
        return Err(CallError::InvalidArguments(format!(
            "{} headers; at most {} are allowed",
            args.headers.len(),
            defs::MAX_HEADERS
        )));
    }
    let mut url = url::Url::parse(&args.url).map_err(|err| {
        CallError::InvalidArguments(format!("{:?} is not an absolute URL: {err}", args.url))
    })?;
    let headers: Vec<(String, String)> = args
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let body = args.body.as_deref().unwrap_or_default().as_bytes();
    let limit = config.body_kib as usize * 1024;
    let mut followed = Vec::new();
    loop {
        let response = http::send(method, &url, &headers, body, limit).map_err(|f| match f {
            http::HttpError::Denied(m) => CallError::Denied(m),
            http::HttpError::Invalid(m) => CallError::InvalidArguments(m),
            http::HttpError::Failed(m) => CallError::Failed(format!("{url}: {m}")),
        })?;
        let location = matches!(response.status, 301 | 302 | 303 | 307 | 308)
            .then(|| header(&response.headers, "location"))
            .flatten();
        match location {
            Some(location) if followed.len() < redirects as usize => {
                url = url.join(&location).map_err(|err| {
                    CallError::Failed(format!(
                        "{url} redirected to {location:?}, which is not a URL: {err}"
                    ))
                })?;
                followed.push(url.to_string());
            }
            _ => return Ok(result(&url, response, followed)),
        }
    }
}

/// The value of header `name` (the first, as text).
fn header(headers: &[(String, Vec<u8>)], name: &str) -> Option<String> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
}

fn result(url: &url::Url, response: http::Response, redirects: Vec<String>) -> CallResult {
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in &response.headers {
        let value = String::from_utf8_lossy(value);
        headers
            .entry(name.to_ascii_lowercase())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert_with(|| value.into_owned());
    }
    let (body, encoding) = match std::str::from_utf8(&response.body) {
        Ok(text) => (text.to_owned(), "text"),
        // A body cut inside a character is still text up to the cut.
        Err(e) if response.truncated && e.error_len().is_none() => (
            String::from_utf8_lossy(&response.body[..e.valid_up_to()]).into_owned(),
            "text",
        ),
        Err(_) => (
            base64::engine::general_purpose::STANDARD.encode(&response.body),
            "base64",
        ),
    };
    let mut line = format!(
        "HTTP {} from {url}, {} bytes of body{}",
        response.status,
        response.body.len(),
        if response.truncated {
            " (truncated: the response was longer)"
        } else {
            ""
        }
    );
    if !redirects.is_empty() {
        line.push_str(&format!(", after {} redirects", redirects.len()));
    }
    let data = json!({
        "url": url.as_str(),
        "status": response.status,
        "headers": headers,
        "body": body,
        "body_encoding": encoding,
        "truncated": response.truncated,
        "redirects": redirects,
    });
    CallResult {
        content: vec![
            ContentPart::Text(line),
            ContentPart::Json(JsonData {
                media_type: "application/json".into(),
                data: data.to_string(),
            }),
        ],
        is_error: response.status >= 400,
    }
}
