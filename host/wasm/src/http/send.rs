//! Sending one checked request: the target is parsed and checked against
//! the grants, the name resolved once, every address checked, and the
//! connection made to a checked address with hyper, every stage under the
//! request's deadline and its body caps.

use std::future::poll_fn;
use std::net::{IpAddr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Sleep;
use tokio_rustls::rustls;
use url::{Host, Url};
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

use super::{HttpDenied, HttpPolicy, address};
use tiny_harness_sandbox::grant::{NetGrant, find_net};

type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;

/// `denied` as the error the guest sees: `internal-error("denied: ...")`.
pub(super) fn denied(denied: &HttpDenied) -> Error {
    Error::InternalError(Some(format!("denied: {denied}")))
}

/// Checks and sends `request`, then streams its response within the limits.
pub(super) async fn send(
    policy: &HttpPolicy,
    mut request: Request<WasiBody>,
    options: Option<RequestOptions>,
    call_deadline: Instant,
) -> Result<(Response<WasiBody>, IoFuture), Error> {
    let limits = policy.limits;
    let deadline = shorter(call_deadline, Some(limits.timeout));
    let (url, grant) = target(request.uri(), &policy.grants).map_err(|e| denied(&e))?;
    if let Some(stand_in) = &policy.stand_in {
        return answer(stand_in.as_ref(), request, limits, deadline).await;
    }
    let port = url
        .port_or_known_default()
        .ok_or(Error::HttpRequestUriInvalid)?;
    let addresses = match url.host() {
        Some(Host::Ipv4(ip)) => vec![IpAddr::V4(ip)],
        Some(Host::Ipv6(ip)) => vec![IpAddr::V6(ip)],
        Some(Host::Domain(name)) => {
            let name = name.to_owned();
            match tokio::time::timeout_at(deadline.into(), policy.resolver.resolve(&name)).await {
                Err(_) => return Err(Error::DnsTimeout),
                Ok(Err(error)) => {
                    return Err(Error::DnsError {
                        rcode: Some(error.to_string()),
                        info_code: None,
                    });
                }
                Ok(Ok(found)) if found.is_empty() => return Err(Error::DestinationNotFound),
                Ok(Ok(found)) => found,
            }
        }
        None => return Err(Error::HttpRequestUriInvalid),
    };
    check_addresses(&url, port, grant, &addresses).map_err(|e| denied(&e))?;
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits.request_bytes as u64) {
        return Err(Error::HttpRequestBodySize(Some(
            limits.request_bytes as u64,
        )));
    }

    let connect_deadline = shorter(deadline, options.and_then(|o| o.connect_timeout));
    let tcp = connect(&addresses, port, connect_deadline).await?;
    let stream: Box<dyn Stream> = if url.scheme() == "https" {
        Box::new(tls(&url, tcp, connect_deadline).await?)
    } else {
        Box::new(tcp)
    };
    let (mut sender, conn) = tokio::time::timeout_at(
        connect_deadline.into(),
        hyper::client::conn::http1::Builder::new()
            .handshake(wasmtime_wasi_http::io::TokioIo::new(stream)),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)??;

    // The request line carries the path only: the authority went into the
    // Host header (wasi:http sets it), and is not repeated to a server.
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;
    let request = request.map(|body| {
        Capped::new(
            body,
            limits.request_bytes,
            deadline,
            Error::HttpRequestBodySize(Some(limits.request_bytes as u64)),
            Error::ConnectionWriteTimeout,
        )
        .boxed_unsync()
    });

    let first_byte_deadline = shorter(deadline, options.and_then(|o| o.first_byte_timeout));
    let mut response = pin!(async move {
        tokio::time::timeout_at(first_byte_deadline.into(), sender.send_request(request))
            .await
            .map_err(|_| Error::ConnectionReadTimeout)?
            .map_err(|e| body_cap(e, limits.request_bytes))
    });
    // Drive the connection while the response head is awaited.
    let mut conn = Some(conn);
    let response = poll_fn(|cx| match response.as_mut().poll(cx) {
        Poll::Ready(done) => Poll::Ready(done),
        Poll::Pending => {
            let Some(driver) = conn.as_mut() else {
                return Poll::Pending;
            };
            let ended = ready!(Pin::new(driver).poll(cx));
            conn = None;
            match ended {
                Ok(()) => response.as_mut().poll(cx),
                Err(e) => Poll::Ready(Err(Error::from(e))),
            }
        }
    })
    .await?;
    let response = response.map(|incoming| {
        Capped::new(
            incoming.map_err(Error::from),
            limits.response_bytes,
            deadline,
            Error::HttpResponseBodySize(Some(limits.response_bytes as u64)),
            Error::HttpResponseTimeout,
        )
        .boxed_unsync()
    });
    let io: IoFuture = Box::new(async move {
        match conn {
            Some(conn) => tokio::time::timeout_at(deadline.into(), conn)
                .await
                .map_err(|_| Error::HttpResponseTimeout)?
                .map_err(Error::from),
            None => Ok(()),
        }
    });
    Ok((response, io))
}

/// The stand-in's answer to `request`, which the grants allow: its body
/// read within the request limit, the response's within the response
/// limit, as a real exchange's would be.
async fn answer(
    stand_in: &dyn crate::StandIn,
    request: Request<WasiBody>,
    limits: super::HttpLimits,
    deadline: Instant,
) -> Result<(Response<WasiBody>, IoFuture), Error> {
    let (head, body) = request.into_parts();
    let body = Capped::new(
        body,
        limits.request_bytes,
        deadline,
        Error::HttpRequestBodySize(Some(limits.request_bytes as u64)),
        Error::ConnectionWriteTimeout,
    )
    .collect()
    .await?
    .to_bytes();
    let asked = crate::HttpRequest {
        method: head.method.to_string(),
        url: head.uri.to_string(),
        headers: head
            .headers
            .iter()
            .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
            .collect(),
        body: body.to_vec(),
    };
    let reply = stand_in
        .http(&asked)
        .map_err(|error| Error::InternalError(Some(error.to_string())))?;
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    // Cut where the cap falls, so that the plugin reads exactly what it may
    // before the cap's error, as it would from a body that arrives in parts.
    let mut body = Bytes::from(reply.body);
    let rest = body.split_off(body.len().min(limits.response_bytes));
    let body = Parts([body, rest].into_iter().filter(|b| !b.is_empty()).collect());
    let response = response
        .body(
            Capped::new(
                body,
                limits.response_bytes,
                deadline,
                Error::HttpResponseBodySize(Some(limits.response_bytes as u64)),
                Error::HttpResponseTimeout,
            )
            .boxed_unsync(),
        )
        .map_err(|e| Error::InternalError(Some(format!("the stand-in's response: {e}"))))?;
    let io: IoFuture = Box::new(async { Ok(()) });
    Ok((response, io))
}

/// A body of parts known in advance, one frame each.
struct Parts(std::collections::VecDeque<Bytes>);

impl Body for Parts {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        Poll::Ready(self.get_mut().0.pop_front().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }
}

/// `error` as the guest should see it: the request body cap when that is
/// what stopped hyper, else hyper's error.
fn body_cap(error: hyper::Error, limit: usize) -> Error {
    let capped = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<Error>())
        .is_some_and(|source| matches!(source, Error::HttpRequestBodySize(_)));
    if capped {
        Error::HttpRequestBodySize(Some(limit as u64))
    } else {
        Error::from(error)
    }
}

/// The URL a request is for (its scheme, host and port, path `/`) and the
/// grant that allows it, or why none does.
pub(super) fn target<'g>(
    uri: &http::Uri,
    grants: &'g [NetGrant],
) -> Result<(Url, &'g NetGrant), HttpDenied> {
    let bad = |why: &str| HttpDenied::BadUrl(format!("{uri} {why}"));
    let scheme = uri
        .scheme_str()
        .ok_or_else(|| bad("has no scheme: use http:// or https://"))?;
    let authority = uri
        .authority()
        .ok_or_else(|| bad("has no host: use http://host[:port]/path"))?;
    if authority.as_str().contains('@') {
        return Err(bad(
            "has userinfo (user@): send credentials in a header instead",
        ));
    }
    let url = Url::parse(&format!("{scheme}://{authority}/"))
        .map_err(|e| bad(&format!("is not a URL ({e})")))?;
    let written = authority.host();
    let standard = match url.host() {
        Some(Host::Ipv6(ip)) => {
            written
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .and_then(|h| h.parse::<std::net::Ipv6Addr>().ok())
                == Some(ip)
        }
        Some(_) => url
            .host_str()
            .is_some_and(|canonical| canonical.eq_ignore_ascii_case(written)),
        None => false,
    };
    if !standard {
        return Err(HttpDenied::NonStandardHost {
            scheme: scheme.to_owned(),
            written: authority.to_string(),
            canonical: url.host_str().unwrap_or_default().to_owned(),
        });
    }
    let grant = find_net(grants, &url)?;
    Ok((url, grant))
}

/// Refuses the request if any of `addresses` is special and `grant` does
/// not name the URL's host literally.
fn check_addresses(
    url: &Url,
    port: u16,
    grant: &NetGrant,
    addresses: &[IpAddr],
) -> Result<(), HttpDenied> {
    if grant.names_host() {
        return Ok(());
    }
    for &address in addresses {
        if let Some(why) = address::special(address) {
            let host = url.host_str().unwrap_or_default();
            return Err(HttpDenied::SpecialAddress {
                url: format!("{}://{host}:{port}", url.scheme()),
                address,
                why,
                grant: grant.as_str().to_owned(),
                suggestion: format!("{}://{host}:{port}", url.scheme()),
            });
        }
    }
    Ok(())
}

/// Connects to the first of `addresses` that answers before `deadline`.
async fn connect(addresses: &[IpAddr], port: u16, deadline: Instant) -> Result<TcpStream, Error> {
    let mut last = Error::DestinationNotFound;
    for &ip in addresses {
        match tokio::time::timeout_at(
            deadline.into(),
            TcpStream::connect(SocketAddr::new(ip, port)),
        )
        .await
        {
            Err(_) => return Err(Error::ConnectionTimeout),
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                last = Error::ConnectionRefused;
            }
            Ok(Err(e)) => last = Error::Connect(e),
        }
    }
    Err(last)
}

/// A TLS session over `tcp`, verifying the server's certificate for the
/// URL's host with the platform's verifier.
async fn tls(
    url: &Url,
    tcp: TcpStream,
    deadline: Instant,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Error> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    let config = CONFIG
        .get_or_init(|| {
            use rustls_platform_verifier::BuilderVerifierExt;
            let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .and_then(|builder| builder.with_platform_verifier())
                .map(|builder| Arc::new(builder.with_no_client_auth()))
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| Error::InternalError(Some(format!("cannot set up TLS: {e}"))))?;
    let name = match url.host() {
        Some(Host::Ipv4(ip)) => rustls::pki_types::ServerName::from(IpAddr::V4(ip)),
        Some(Host::Ipv6(ip)) => rustls::pki_types::ServerName::from(IpAddr::V6(ip)),
        Some(Host::Domain(name)) => rustls::pki_types::ServerName::try_from(name.to_owned())
            .map_err(|_| Error::HttpRequestUriInvalid)?,
        None => return Err(Error::HttpRequestUriInvalid),
    };
    tokio::time::timeout_at(
        deadline.into(),
        tokio_rustls::TlsConnector::from(config).connect(name, tcp),
    )
    .await
    .map_err(|_| Error::ConnectionTimeout)?
    .map_err(Error::Tls)
}

/// The earlier of `deadline` and `timeout` from now.
fn shorter(deadline: Instant, timeout: Option<std::time::Duration>) -> Instant {
    match timeout.and_then(|t| Instant::now().checked_add(t)) {
        Some(sooner) => deadline.min(sooner),
        None => deadline,
    }
}

trait Stream: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Sync + Unpin + 'static> Stream for T {}

/// A body cut off with an error past `limit` bytes or at `deadline`.
struct Capped<B> {
    inner: B,
    left: usize,
    deadline: Pin<Box<Sleep>>,
    over: Option<Error>,
    late: Option<Error>,
}

impl<B> Capped<B> {
    fn new(inner: B, limit: usize, deadline: Instant, over: Error, late: Error) -> Self {
        Capped {
            inner,
            left: limit,
            deadline: Box::pin(tokio::time::sleep_until(deadline.into())),
            over: Some(over),
            late: Some(late),
        }
    }
}

impl<B> Body for Capped<B>
where
    B: Body<Data = Bytes, Error = Error> + Unpin,
{
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        if this.over.is_none() || this.late.is_none() {
            return Poll::Ready(None);
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(this.late.take().map(Err));
        }
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        if let Some(Ok(frame)) = &frame
            && let Some(data) = frame.data_ref()
        {
            match this.left.checked_sub(data.len()) {
                Some(left) => this.left = left,
                None => return Poll::Ready(this.over.take().map(Err)),
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
