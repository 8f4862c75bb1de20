//! Outbound HTTP through `wasi:http/outgoing-handler` (feature `http`):
//! one request, its body written, its response read up to a limit.
//!
//! ```ignore
//! let url = url::Url::parse("https://api.example.com/v1/items")?;
//! let response = http::send("GET", &url, &[], b"", 1 << 20)?;
//! ```
//!
//! The host checks and sends every request under the plugin's `net`
//! grants, after its own DNS lookup; this side only shapes it. A refusal
//! by the host arrives as `internal-error` with a message that begins
//! `denied: `, and becomes [`HttpError::Denied`] (the call error `denied`
//! through `?` in a tool). No redirect is followed: a 3xx is a response.

pub use url::Url;

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, HeaderError, IncomingResponse, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasip2::io::streams::StreamError;

/// The most bytes written to the body stream at once (what
/// `blocking-write-and-flush` accepts).
const WRITE_CHUNK: usize = 4096;

/// The most bytes asked for in one read of the response body.
const READ_CHUNK: u64 = 64 * 1024;

/// A response: status, headers in order, and the body up to the limit.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers, in the order they came, names in lower case.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body, up to the limit.
    pub body: Vec<u8>,
    /// Whether the body went on past the limit (or the host's cap).
    pub truncated: bool,
}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The host refused it; the message says what to grant.
    Denied(String),
    /// The arguments cannot make a request (a forbidden header, say).
    Invalid(String),
    /// It was sent (or tried) and failed.
    Failed(String),
}

/// Sends `method url` with `headers` and `body`, reading at most `limit`
/// bytes of the response body.
pub fn send(
    method: &str,
    url: &Url,
    headers: &[(String, String)],
    body: &[u8],
    limit: usize,
) -> Result<Response, HttpError> {
    let scheme = match url.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => {
            return Err(HttpError::Invalid(format!(
                "{other}: URLs are not supported; use http:// or https://"
            )));
        }
    };
    let authority = match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => return Err(HttpError::Invalid(format!("{url} has no host"))),
    };
    let mut path = url.path().to_owned();
    if let Some(query) = url.query() {
        path.push('?');
        path.push_str(query);
    }
    let mut list: Vec<(String, Vec<u8>)> = headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value.as_bytes().to_vec()))
        .collect();
    // A known length, so that the body is sent as it is rather than chunked.
    if !body.is_empty() && !list.iter().any(|(name, _)| name == "content-length") {
        list.push(("content-length".into(), body.len().to_string().into_bytes()));
    }
    let fields = Fields::from_list(&list).map_err(|e| {
        HttpError::Invalid(match e {
            HeaderError::Forbidden => {
                "a header may not be set by a plugin (host, connection and other hop-by-hop headers)"
                    .to_owned()
            }
            HeaderError::InvalidSyntax => "a header name or value is not valid".to_owned(),
            HeaderError::Immutable => "the headers cannot be changed".to_owned(),
        })
    })?;
    let request = OutgoingRequest::new(fields);
    let method = match method.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "OPTIONS" => Method::Options,
        "PATCH" => Method::Patch,
        "TRACE" => Method::Trace,
        "CONNECT" => Method::Connect,
        other => Method::Other(other.to_owned()),
    };
    let invalid = |what: &str| HttpError::Invalid(format!("the {what} is not accepted"));
    request
        .set_method(&method)
        .map_err(|()| invalid("method"))?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| invalid("scheme"))?;
    request
        .set_authority(Some(&authority))
        .map_err(|()| invalid("host"))?;
    request
        .set_path_with_query(Some(&path))
        .map_err(|()| invalid("path"))?;
    let outgoing = request
        .body()
        .map_err(|()| HttpError::Failed("cannot open the request body".into()))?;
    let future = outgoing_handler::handle(request, None).map_err(failure)?;
    let wait = || {
        future.subscribe().block();
        match future.get() {
            Some(Ok(Ok(response))) => Ok(response),
            Some(Ok(Err(code))) => Err(failure(code)),
            Some(Err(())) | None => Err(HttpError::Failed("the response was lost".into())),
        }
    };
    // When the host stops the request while its body is being written,
    // the reason is in the response, not in the failed write.
    let sent = write_body(&outgoing, body)
        .and_then(|()| OutgoingBody::finish(outgoing, None).map_err(failure));
    let response = match (sent, wait()) {
        (_, Err(reason)) => return Err(reason),
        (Err(write), Ok(_)) => return Err(write),
        (Ok(()), Ok(response)) => response,
    };
    read(response, limit)
}

fn write_body(outgoing: &OutgoingBody, body: &[u8]) -> Result<(), HttpError> {
    if body.is_empty() {
        return Ok(());
    }
    let stream = outgoing
        .write()
        .map_err(|()| HttpError::Failed("cannot write the request body".into()))?;
    for chunk in body.chunks(WRITE_CHUNK) {
        stream
            .blocking_write_and_flush(chunk)
            .map_err(|e| stream_failure(e, "writing the request body"))?;
    }
    Ok(())
}

fn read(response: IncomingResponse, limit: usize) -> Result<Response, HttpError> {
    let status = response.status();
    let headers = response.headers().entries();
    let incoming = response
        .consume()
        .map_err(|()| HttpError::Failed("cannot read the response body".into()))?;
    let stream = incoming
        .stream()
        .map_err(|()| HttpError::Failed("cannot read the response body".into()))?;
    let mut body = Vec::new();
    let mut truncated = false;
    loop {
        let room = limit.saturating_sub(body.len());
        if room == 0 {
            // One byte more tells a body that ends exactly here from a
            // longer one.
            truncated = !matches!(stream.blocking_read(1), Err(StreamError::Closed));
            break;
        }
        match stream.blocking_read(READ_CHUNK.min(room as u64)) {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => match body_error(&e) {
                // The host's own cap: what was read is what there is.
                ErrorCode::HttpResponseBodySize(_) => {
                    truncated = true;
                    break;
                }
                ErrorCode::InternalError(Some(message)) => {
                    return Err(HttpError::Failed(format!(
                        "reading the response body failed: {message}"
                    )));
                }
                code => return Err(failure(code)),
            },
        }
    }
    drop(stream);
    drop(incoming);
    Ok(Response {
        status,
        headers,
        body,
        truncated,
    })
}

/// The error code behind a failed read of a response body. The host's
/// `wasi:http` (wasmtime-wasi-http 48) does not attach an error code to
/// body stream errors, only its message, so the two limits the host
/// enforces on a body are recognised by their messages; anything else is
/// `internal-error` with the message.
fn body_error(e: &wasip2::io::error::Error) -> ErrorCode {
    if let Some(code) = wasip2::http::types::http_error_code(e) {
        return code;
    }
    let message = e.to_debug_string();
    if message.starts_with("HTTP response body size exceeds limit") {
        ErrorCode::HttpResponseBodySize(None)
    } else if message.starts_with("HTTP response timeout")
        || message.starts_with("connection read timeout")
    {
        ErrorCode::HttpResponseTimeout
    } else {
        ErrorCode::InternalError(Some(message))
    }
}

fn stream_failure(e: StreamError, doing: &str) -> HttpError {
    match e {
        StreamError::Closed => HttpError::Failed(format!("{doing}: the connection closed")),
        StreamError::LastOperationFailed(e) => match wasip2::http::types::http_error_code(&e) {
            Some(code) => failure(code),
            None => HttpError::Failed(format!("{doing}: {}", e.to_debug_string())),
        },
    }
}

/// The failure an error code stands for, with a message for the model.
fn failure(code: ErrorCode) -> HttpError {
    match code {
        ErrorCode::InternalError(Some(message)) => match message.strip_prefix("denied: ") {
            Some(reason) => HttpError::Denied(reason.to_owned()),
            None => HttpError::Failed(message),
        },
        ErrorCode::HttpRequestDenied => HttpError::Denied("the host refused the request".into()),
        ErrorCode::DnsError(payload) => HttpError::Failed(format!(
            "DNS lookup failed{}",
            payload.rcode.map(|r| format!(": {r}")).unwrap_or_default()
        )),
        ErrorCode::DnsTimeout => HttpError::Failed("DNS lookup timed out".into()),
        ErrorCode::DestinationNotFound => HttpError::Failed("the host has no address".into()),
        ErrorCode::ConnectionRefused => HttpError::Failed("the connection was refused".into()),
        ErrorCode::ConnectionTimeout => HttpError::Failed("connecting timed out".into()),
        ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout => {
            HttpError::Failed("the response did not arrive in time".into())
        }
        ErrorCode::HttpRequestBodySize(limit) => HttpError::Invalid(format!(
            "the request body is larger than the host allows{}",
            limit.map(|l| format!(" ({l} bytes)")).unwrap_or_default()
        )),
        ErrorCode::TlsCertificateError => {
            HttpError::Failed("the server's TLS certificate is not valid for it".into())
        }
        other => HttpError::Failed(format!("the request failed: {other:?}")),
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Denied(m) | HttpError::Invalid(m) | HttpError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for crate::ToolError {
    fn from(err: HttpError) -> crate::ToolError {
        match err {
            HttpError::Denied(m) => crate::ToolError::Denied(m),
            HttpError::Invalid(m) => crate::ToolError::InvalidArguments(m),
            HttpError::Failed(m) => crate::ToolError::Failed(m),
        }
    }
}
