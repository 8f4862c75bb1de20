//! [`OciError`]: every way fetching, publishing or storing a component
//! fails.
//!
//! Invariants: each variant is one cause; each displays as one line that
//! names the reference (or, for the credentials, the registry; for the
//! store, the file) and says what to do. Text that comes from outside (a
//! registry's answer, a credential helper's output, a reference as typed)
//! goes through [`one_line`] first: control, bidi and invisible characters
//! become visible escapes (the core's `display::one_line`) and it is cut at
//! [`MAX_QUOTED`] characters, so it can neither break the line, nor read as
//! other text, nor make the message long.

use std::path::PathBuf;
use std::time::Duration;

/// The most characters of outside text an error quotes.
pub const MAX_QUOTED: usize = 200;

/// `text` as one short line: its first [`MAX_QUOTED`] characters with
/// every control, bidi and invisible character (newlines included) shown
/// as an escape, ending in ` …` when it was longer
/// ([`tiny_harness_core::display::one_line_cut`]).
pub fn one_line(text: &str) -> String {
    tiny_harness_core::display::one_line_cut(text, MAX_QUOTED)
}

/// Why a component was not fetched, published or stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// The text is not an `oci://` reference.
    #[error(
        "`{input}` is not an OCI reference ({reason}): write oci://HOST[:PORT]/REPOSITORY:TAG or oci://HOST[:PORT]/REPOSITORY@sha256:HEX"
    )]
    BadReference {
        /// The text as given (on one line).
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The reference cannot be used for this operation (pushing needs a
    /// tag and no digest).
    #[error("{reference}: {reason}")]
    WrongReference {
        /// The reference.
        reference: String,
        /// What the operation needs, and what to write instead.
        reason: &'static str,
    },
    /// Plain HTTP was asked for a registry that is not on loopback.
    #[error(
        "{reference}: plain HTTP is only for a loopback registry (localhost, 127.0.0.0/8, [::1]): reach this one over HTTPS"
    )]
    PlainHttpNotLoopback {
        /// The reference.
        reference: String,
    },
    /// The operation did not finish in time.
    #[error(
        "{reference}: the registry did not finish answering within {} s: check that it is up and reachable, or allow more time",
        .after.as_secs_f64()
    )]
    Timeout {
        /// The reference.
        reference: String,
        /// The time allowed for the whole operation.
        after: Duration,
    },
    /// The registry has no such manifest or blob.
    #[error(
        "{reference}: the registry has no {what} (HTTP 404): check the repository, tag and digest"
    )]
    NotFound {
        /// The reference.
        reference: String,
        /// What was asked for: `manifest`, `blob sha256:…`.
        what: String,
    },
    /// The registry answered with an unexpected HTTP status.
    #[error(
        "{reference}: the registry answered HTTP {code} to the {what} request: try again later, or check the registry"
    )]
    Status {
        /// The reference.
        reference: String,
        /// The HTTP status code.
        code: u16,
        /// Which request: `manifest`, `blob`, `token`; for a push, `blob
        /// check`, `upload start`, `blob upload` or `manifest push`.
        what: String,
    },
    /// The registry refused the credentials, or asked for some and had
    /// none.
    #[error(
        "{reference}: the registry refused access (HTTP {code}): log in with `docker login {registry}` or check the credentials it is given"
    )]
    Unauthorized {
        /// The reference.
        reference: String,
        /// The registry (`HOST[:PORT]`).
        registry: String,
        /// 401 or 403.
        code: u16,
    },
    /// The registry redirected to another host (or port, or scheme).
    #[error(
        "{reference}: the registry redirected from {from} to {to}, another host: refused (only redirects within the registry are followed)"
    )]
    Redirect {
        /// The reference.
        reference: String,
        /// The URL that answered with the redirect.
        from: String,
        /// Where it pointed (on one line).
        to: String,
    },
    /// The registry redirected too many times, or in a way that is not
    /// HTTP.
    #[error("{reference}: the registry's redirects ({reason}): refused")]
    BadRedirect {
        /// The reference.
        reference: String,
        /// What was wrong with them.
        reason: String,
    },
    /// The registry named an upload location that a component may not be
    /// sent to: on another origin (scheme, host or port) than the
    /// registry's, and not HTTPS.
    #[error(
        "{reference}: the registry asked for the upload to go to {location}, off the registry and not HTTPS: refused (a component is sent to the registry itself, or over HTTPS)"
    )]
    UploadLocation {
        /// The reference.
        reference: String,
        /// The location it named (on one line).
        location: String,
    },
    /// The manifest is larger than [`Limits::manifest_bytes`](crate::Limits::manifest_bytes).
    #[error(
        "{reference}: the manifest is larger than {limit} bytes: this is not a component manifest (or raise the limit)"
    )]
    ManifestTooLarge {
        /// The reference.
        reference: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The manifest is not JSON of the image manifest's shape.
    #[error(
        "{reference}: the manifest is not a valid OCI image manifest ({reason}): publish the component again"
    )]
    BadManifest {
        /// The reference.
        reference: String,
        /// What is wrong (on one line).
        reason: String,
    },
    /// The manifest is another kind than an OCI image manifest (an index,
    /// a Docker manifest).
    #[error(
        "{reference}: the manifest is {media_type}, not an OCI image manifest: name a single Wasm component, not an index or a container image"
    )]
    NotAnImageManifest {
        /// The reference.
        reference: String,
        /// Its media type (on one line).
        media_type: String,
    },
    /// The config or the layer is not of the Wasm artifact's media type.
    #[error(
        "{reference}: the {part} is {media_type}, not {expected}: this is not a Wasm component artifact"
    )]
    NotWasm {
        /// The reference.
        reference: String,
        /// `config` or `layer`.
        part: &'static str,
        /// Its media type (on one line).
        media_type: String,
        /// What it should be.
        expected: &'static str,
    },
    /// The manifest has another number of layers than one.
    #[error(
        "{reference}: the manifest has {count} layers, not exactly one: this is not a Wasm component artifact"
    )]
    LayerCount {
        /// The reference.
        reference: String,
        /// How many it has.
        count: usize,
    },
    /// The blob is larger than [`Limits::blob_bytes`](crate::Limits::blob_bytes).
    #[error(
        "{reference}: the component is larger than {limit} bytes: refused (raise the limit if it is really meant to be this large)"
    )]
    BlobTooLarge {
        /// The reference.
        reference: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// Bytes do not hash to the digest they were asked for by.
    #[error(
        "{reference}: the content's digest is {actual}, not {expected}: refused (the registry or the network altered it)"
    )]
    DigestMismatch {
        /// The reference (or, for the store, the file).
        reference: String,
        /// The digest asked for.
        expected: String,
        /// The digest of what came.
        actual: String,
    },
    /// The bytes to publish are not a WebAssembly component.
    #[error(
        "{reference}: the bytes to publish are not a WebAssembly component ({reason}): build a component (wasm32-wasip2)"
    )]
    NotAComponent {
        /// The reference.
        reference: String,
        /// What the parser said (on one line).
        reason: String,
    },
    /// The registry could not be reached, or the connection failed.
    #[error("{reference}: cannot reach the registry ({reason}): check the address and the network")]
    Network {
        /// The reference.
        reference: String,
        /// What failed (on one line).
        reason: String,
    },
    /// The registry answered against the distribution spec, or the OCI
    /// client failed in another way.
    #[error("{reference}: the registry's answer is not usable ({reason}): check the registry")]
    Registry {
        /// The reference.
        reference: String,
        /// What was wrong (on one line).
        reason: String,
    },
    /// The Docker config could not be read.
    #[error("credentials for {registry}: cannot use {} ({reason}): fix or remove it", .path.display())]
    DockerConfig {
        /// The registry.
        registry: String,
        /// The config file.
        path: PathBuf,
        /// What is wrong (on one line).
        reason: String,
    },
    /// The credential helper the Docker config names is not on `PATH`.
    #[error(
        "credentials for {registry}: the credential helper {program} is not on PATH: install it, or remove it from the Docker config"
    )]
    HelperMissing {
        /// The registry.
        registry: String,
        /// The program, `docker-credential-NAME`.
        program: String,
    },
    /// The credential helper failed, hung or answered nonsense.
    #[error(
        "credentials for {registry}: {program} failed ({reason}): run `{program} get` to see why, or log in again"
    )]
    Helper {
        /// The registry.
        registry: String,
        /// The program, `docker-credential-NAME`.
        program: String,
        /// What went wrong (on one line).
        reason: String,
    },
    /// The HTTP clients could not be built (TLS roots, for instance).
    #[error("cannot set up the HTTP client ({reason}): check the system's TLS setup")]
    Setup {
        /// What failed (on one line).
        reason: String,
    },
    /// Reading or writing the store failed.
    #[error("component store: cannot write {} ({source}): check the directory's permissions and free space", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_text_is_one_short_line() {
        assert_eq!(one_line("a\nb\r\tc"), "a\\nb\\r\\tc");
        // A registry's error text that would read backwards is escaped.
        let error = OciError::Registry {
            reference: "oci://h/a:1".to_owned(),
            reason: one_line("denied\u{202e}txet\u{2066}"),
        };
        assert!(
            error.to_string().contains(r"denied\u{202e}txet\u{2066}"),
            "{error}"
        );
        assert!(!error.to_string().contains(['\u{202e}', '\u{2066}']));
        let long = "x".repeat(500);
        let line = one_line(&long);
        assert!(line.ends_with(" …"));
        assert_eq!(line.chars().count(), MAX_QUOTED + 2);
        assert_eq!(one_line(&"y".repeat(MAX_QUOTED)), "y".repeat(MAX_QUOTED));
    }
}
