//! The push of a Wasm OCI artifact, over the same reqwest client and by
//! the same rules as the reads (the `pull` module): each blob (the
//! component, then the config) is checked for with `HEAD`, and if absent
//! uploaded whole (`POST /v2/NAME/blobs/uploads/`, then `PUT` to the
//! `Location` it answers with `?digest=`); then the manifest is `PUT` by
//! tag, as the OCI distribution spec has it.
//!
//! Invariants:
//! - the manifest goes last, only once every blob is in: a push refused
//!   or failed at any step pushes no manifest (blobs already uploaded stay
//!   as unreferenced blobs, which a registry collects);
//! - requests go to the registry's own origin (scheme, host and port),
//!   to the token service its challenge names under the pull rules
//!   (HTTPS, or plain HTTP on loopback when the registry itself is a
//!   loopback one reached so), and to an upload `Location` only if that is
//!   on the registry's origin or is HTTPS ([`OciError::UploadLocation`]
//!   otherwise, before a byte is sent there); redirects are followed only
//!   within the origin of the URL that answered, at most
//!   [`MAX_REDIRECTS`](crate::pull::MAX_REDIRECTS) times;
//! - credentials go only to the token service (as the token protocol
//!   has it) and to the registry's origin, where a token is asked for with
//!   the scope `repository:NAME:pull,push`; an upload `Location` elsewhere
//!   (HTTPS) gets the component without any `Authorization`;
//! - no answer is read past a bound: an answer's body, error or not, is
//!   read to at most [`MAX_ANSWER_BODY`] and the rest dropped with the
//!   connection; a token answer as the pull reads it;
//! - nothing here bounds time: the caller runs the whole push under the
//!   operation's timeout ([`crate::Client::push`]).

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode};
use url::Url;

use crate::error::{OciError, one_line};
use crate::manifest::{Artifact, MANIFEST_MEDIA_TYPE};
use crate::pull::{Puller, same_origin};
use crate::reference::Digest;

/// The most of an answer's body that is read (an error's explanation,
/// an upload's acknowledgement); the rest is dropped unread.
pub const MAX_ANSWER_BODY: u64 = 64 << 10;

/// The media type a blob is uploaded as.
const BLOB_MEDIA_TYPE: &str = "application/octet-stream";

/// One request of the push.
struct Step<'r> {
    method: Method,
    body: Option<&'r Bytes>,
    content_type: Option<&'static str>,
    /// What the request is, for messages: `blob check`, `upload start`,
    /// `blob upload`, `manifest push`.
    what: &'static str,
    /// A 404 answer is an answer (a blob that is not there), not an error.
    absent_is_an_answer: bool,
}

/// One push to the registry of one reference.
pub(crate) struct Pusher<'a> {
    /// The reads and the authentication, with the actions `pull,push`.
    pub puller: Puller<'a>,
}

impl Pusher<'_> {
    /// Pushes `artifact`, whose layer is `layer`, and tags its manifest
    /// `tag`.
    pub async fn push(&self, tag: &str, artifact: &Artifact, layer: Bytes) -> Result<(), OciError> {
        self.blob(&artifact.layer_digest, &layer).await?;
        let config = Bytes::copy_from_slice(&artifact.config);
        self.blob(&artifact.config_digest, &config).await?;
        let manifest = Bytes::copy_from_slice(&artifact.manifest);
        let url = self.url(&format!(
            "/v2/{}/manifests/{tag}",
            self.puller.reference.repository()
        ))?;
        let step = Step {
            method: Method::PUT,
            body: Some(&manifest),
            content_type: Some(MANIFEST_MEDIA_TYPE),
            what: "manifest push",
            absent_is_an_answer: false,
        };
        let answer = self.send(url, &step).await?;
        self.drop_body(answer).await;
        Ok(())
    }

    /// Uploads the blob `bytes`, whose digest is `digest`, unless the
    /// repository has it.
    async fn blob(&self, digest: &Digest, bytes: &Bytes) -> Result<(), OciError> {
        let repository = self.puller.reference.repository();
        let check = Step {
            method: Method::HEAD,
            body: None,
            content_type: None,
            what: "blob check",
            absent_is_an_answer: true,
        };
        let url = self.url(&format!("/v2/{repository}/blobs/{digest}"))?;
        let answer = self.send(url, &check).await?;
        let present = answer.status().is_success();
        self.drop_body(answer).await;
        if present {
            return Ok(());
        }

        let empty = Bytes::new();
        let start = Step {
            method: Method::POST,
            body: Some(&empty),
            content_type: None,
            what: "upload start",
            absent_is_an_answer: false,
        };
        let url = self.url(&format!("/v2/{repository}/blobs/uploads/"))?;
        let answer = self.send(url, &start).await?;
        let location = answer
            .headers()
            .get(LOCATION)
            .ok_or_else(|| {
                self.puller
                    .registry_error("an upload was started without a Location to send it to")
            })?
            .to_str()
            .map_err(|_| {
                self.puller
                    .registry_error("an upload Location that is not text")
            })?
            .to_owned();
        let from = answer.url().clone();
        self.drop_body(answer).await;
        let mut target = self.upload_target(&from, &location)?;
        target
            .query_pairs_mut()
            .append_pair("digest", &digest.to_string());
        let upload = Step {
            method: Method::PUT,
            body: Some(bytes),
            content_type: Some(BLOB_MEDIA_TYPE),
            what: "blob upload",
            absent_is_an_answer: false,
        };
        let answer = self.send(target, &upload).await?;
        self.drop_body(answer).await;
        Ok(())
    }

    /// Where an upload goes: `location` (answered to a request to
    /// `from`) if it is on the registry's origin, or HTTPS.
    fn upload_target(&self, from: &Url, location: &str) -> Result<Url, OciError> {
        let refused = |shown: &str| OciError::UploadLocation {
            reference: self.puller.name(),
            location: one_line(shown),
        };
        let to = from.join(location).map_err(|_| refused(location))?;
        if same_origin(&to, &self.puller.origin) || to.scheme() == "https" {
            Ok(to)
        } else {
            Err(refused(to.as_str()))
        }
    }

    /// `scheme://registry` joined with `path`.
    fn url(&self, path: &str) -> Result<Url, OciError> {
        self.puller
            .origin
            .join(path)
            .map_err(|error| self.puller.registry_error(&error.to_string()))
    }

    /// The successful answer to `step` sent to `url` (or its 404 if that
    /// is an answer), after redirects within the origin and one round of
    /// authentication on the registry's origin.
    async fn send(&self, mut url: Url, step: &Step<'_>) -> Result<reqwest::Response, OciError> {
        let puller = &self.puller;
        let mut authenticated = false;
        let mut redirects = 0;
        loop {
            let on_registry = same_origin(&url, &puller.origin);
            let mut request = puller.http.request(step.method.clone(), url.clone());
            if on_registry && let Some(value) = puller.cached() {
                request = request.header(AUTHORIZATION, value);
            }
            if let Some(content_type) = step.content_type {
                request = request.header(CONTENT_TYPE, content_type);
            }
            if let Some(body) = step.body {
                request = request.body(body.clone());
            }
            let response = request
                .send()
                .await
                .map_err(|error| puller.network(&error))?;
            let status = response.status();
            if status.is_redirection() {
                redirects += 1;
                url = puller.redirect(&url, &response, redirects)?;
                continue;
            }
            if status.is_success() || (step.absent_is_an_answer && status == StatusCode::NOT_FOUND)
            {
                return Ok(response);
            }
            if status == StatusCode::UNAUTHORIZED && !authenticated && on_registry {
                authenticated = true;
                let value = puller.authenticate(&response).await?;
                self.drop_body(response).await;
                puller.remember(value);
                continue;
            }
            self.drop_body(response).await;
            return Err(match status {
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => puller.unauthorized(status),
                _ => OciError::Status {
                    reference: puller.name(),
                    code: status.as_u16(),
                    what: step.what.to_owned(),
                },
            });
        }
    }

    /// Reads at most [`MAX_ANSWER_BODY`] of `response`'s body (so that a
    /// short one leaves the connection reusable) and drops the rest with
    /// the connection.
    async fn drop_body(&self, response: reqwest::Response) {
        let over = || self.puller.registry_error("an answer over the bound");
        let _ = self
            .puller
            .read(response, MAX_ANSWER_BODY, over, |_| {})
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::HashMap;
    use std::sync::Mutex;

    use crate::credentials::Credentials;
    use crate::{Limits, Reference};

    /// Where an upload `location`, answered by `registry`'s POST, goes.
    fn target(registry: &str, location: &str) -> Result<String, OciError> {
        let reference: Reference = format!("oci://{registry}/x:1").parse().unwrap();
        let http = reqwest::Client::new();
        let tokens = Mutex::new(HashMap::new());
        let limits = Limits::default();
        let scheme = if reference.is_loopback() {
            "http"
        } else {
            "https"
        };
        let origin: Url = format!("{scheme}://{registry}").parse().unwrap();
        let pusher = Pusher {
            puller: Puller {
                http: &http,
                reference: &reference,
                origin: origin.clone(),
                credentials: &Credentials::Anonymous,
                tokens: &tokens,
                limits: &limits,
                actions: "pull,push",
            },
        };
        let from = origin.join("/v2/x/blobs/uploads/").unwrap();
        pusher
            .upload_target(&from, location)
            .map(|url| url.to_string())
    }

    #[test]
    fn an_upload_goes_to_the_registry_or_over_https() {
        // On the registry's origin, relative or absolute.
        assert_eq!(
            target("127.0.0.1:5000", "/v2/x/blobs/uploads/u?_state=s").unwrap(),
            "http://127.0.0.1:5000/v2/x/blobs/uploads/u?_state=s"
        );
        assert_eq!(
            target("registry.example", "https://registry.example:443/u").unwrap(),
            "https://registry.example/u"
        );
        // HTTPS elsewhere (a registry's storage service): allowed, as
        // the distribution spec allows; `send` gives it no credentials.
        assert_eq!(
            target("registry.example", "https://storage.example/u?sig=1").unwrap(),
            "https://storage.example/u?sig=1"
        );
        // Plain HTTP anywhere but the loopback registry's own origin, or
        // another scheme: refused.
        for (registry, location) in [
            ("127.0.0.1:5000", "http://127.0.0.1:5001/u"),
            ("127.0.0.1:5000", "http://localhost:5000/u"),
            ("127.0.0.1:5000", "http://192.0.2.1/u"),
            ("127.0.0.1:5000", "ftp://127.0.0.1:5000/u"),
            ("registry.example", "http://registry.example/u"),
            ("registry.example", "http://storage.example/u"),
        ] {
            let error = target(registry, location).unwrap_err();
            assert!(
                matches!(&error, OciError::UploadLocation { .. }),
                "{location}: {error}"
            );
        }
    }
}
