//! Where a component lives in a registry: [`Reference`]
//! (`oci://HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX]`) and [`Digest`].
//!
//! Invariants: a [`Reference`] that exists was parsed whole and is valid
//! by the OCI distribution spec: its host is a DNS name, an IPv4 address or
//! a bracketed IPv6 address with an optional port of 1 to 65535; its
//! repository matches the spec's path grammar (lower case only); its tag
//! matches the spec's tag grammar; it has a tag or a digest or both
//! (nothing is taken to mean `latest`). A [`Digest`] is always `sha256:`
//! and 64 lower-case hex digits, so its text is safe as a file name and in
//! a URL. Both display back to the text they were parsed from.

use std::fmt;
use std::net::Ipv6Addr;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

use crate::error::{OciError, one_line};

/// The only scheme a reference may have.
const SCHEME: &str = "oci://";

/// The longest `HOST[:PORT]/REPOSITORY`: many registries and clients
/// refuse longer names (the distribution spec's advice).
const MAX_NAME: usize = 255;

/// The longest tag the distribution spec allows.
const MAX_TAG: usize = 128;

/// A sha256 content digest: `sha256:` and 64 lower-case hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    /// The digest whose 32 bytes these are.
    pub fn from_bytes(bytes: [u8; 32]) -> Digest {
        Digest(bytes)
    }

    /// The 64 lower-case hex digits, without `sha256:`.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

/// Why a text is not a [`Digest`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{}` is not a digest: write sha256: and 64 lower-case hex digits", one_line(.0))]
pub struct BadDigest(pub String);

impl FromStr for Digest {
    type Err = BadDigest;

    fn from_str(text: &str) -> Result<Digest, BadDigest> {
        let bad = || BadDigest(text.to_owned());
        let hex = text.strip_prefix("sha256:").ok_or_else(bad)?;
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(bad());
        }
        let mut bytes = [0; 32];
        hex::decode_to_slice(hex, &mut bytes).map_err(|_| bad())?;
        Ok(Digest(bytes))
    }
}

/// A component in a registry: `oci://HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<Digest>,
}

impl Reference {
    /// The registry: `HOST` or `HOST:PORT` (an IPv6 host in brackets), as
    /// written.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository, such as `plugins/fs`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag, if the reference names one.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest, if the reference names one.
    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    /// The same repository, at `digest` and without a tag.
    pub fn with_digest(&self, digest: Digest) -> Reference {
        Reference {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: None,
            digest: Some(digest),
        }
    }

    /// The host without the port (an IPv6 address keeps its brackets).
    pub fn host(&self) -> &str {
        split_port(&self.registry).0
    }

    /// Whether the host is a loopback one by the rule the whole host keeps
    /// for loopback names: `localhost`, an
    /// address in 127.0.0.0/8 in any spelling a URL accepts, `[::1]` or
    /// `[::ffff:127.x.y.z]`. Only such a registry may be reached over plain
    /// HTTP.
    pub fn is_loopback(&self) -> bool {
        tiny_harness_core::net::is_loopback_host(self.host())
    }

    /// The same repository and tag, without the digest (a tag to follow).
    pub fn without_digest(&self) -> Reference {
        Reference {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: self.tag.clone(),
            digest: None,
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl FromStr for Reference {
    type Err = OciError;

    fn from_str(text: &str) -> Result<Reference, OciError> {
        parse(text).map_err(|reason| OciError::BadReference {
            input: one_line(text),
            reason,
        })
    }
}

/// Parses a reference, or says what is wrong with it.
fn parse(text: &str) -> Result<Reference, String> {
    let Some(rest) = text.strip_prefix(SCHEME) else {
        return Err(match text.split_once("://") {
            Some((scheme, _)) => format!("the scheme is {}, not oci", one_line(scheme)),
            None => "it does not start with oci://".to_owned(),
        });
    };
    let (registry, path) = rest
        .split_once('/')
        .ok_or("it names no repository after the host")?;
    check_registry(registry)?;
    let (name, digest) = match path.split_once('@') {
        Some((name, digest)) => (
            name,
            Some(
                digest
                    .parse::<Digest>()
                    .map_err(|error| error.to_string())?,
            ),
        ),
        None => (path, None),
    };
    let (repository, tag) = match name.rsplit_once(':') {
        Some((repository, tag)) => (repository, Some(tag)),
        None => (name, None),
    };
    check_repository(repository)?;
    if let Some(tag) = tag {
        check_tag(tag)?;
    }
    if registry.len() + 1 + repository.len() > MAX_NAME {
        return Err(format!(
            "HOST/REPOSITORY is longer than {MAX_NAME} characters"
        ));
    }
    if tag.is_none() && digest.is_none() {
        return Err("it names neither a tag nor a digest, and latest is not assumed: name a tag or a digest".to_owned());
    }
    Ok(Reference {
        registry: registry.to_owned(),
        repository: repository.to_owned(),
        tag: tag.map(str::to_owned),
        digest,
    })
}

/// `HOST` and `PORT` of `HOST[:PORT]` (a bracketed IPv6 host keeps its
/// brackets).
fn split_port(registry: &str) -> (&str, Option<&str>) {
    if registry.starts_with('[') {
        return match registry.find(']') {
            Some(end) => match registry[end + 1..].strip_prefix(':') {
                Some(port) => (&registry[..=end], Some(port)),
                None => (&registry[..=end], None),
            },
            None => (registry, None),
        };
    }
    match registry.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (registry, None),
    }
}

fn check_registry(registry: &str) -> Result<(), String> {
    if registry.is_empty() {
        return Err("it names no registry host".to_owned());
    }
    let (host, port) = split_port(registry);
    if let Some(port) = port {
        let valid = !port.is_empty()
            && port.len() <= 5
            && port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u16>().is_ok_and(|p| p != 0);
        if !valid {
            return Err(format!("the port {} is not 1 to 65535", one_line(port)));
        }
    }
    if let Some(v6) = host.strip_prefix('[') {
        return match v6.strip_suffix(']').map(str::parse::<Ipv6Addr>) {
            Some(Ok(_)) => Ok(()),
            _ => Err(format!(
                "the host {} is not an IPv6 address",
                one_line(host)
            )),
        };
    }
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(format!(
            "the host {} is not a host name or address",
            one_line(host)
        ));
    }
    Ok(())
}

/// The distribution spec's repository grammar:
/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*`.
fn check_repository(repository: &str) -> Result<(), String> {
    let bad = || {
        format!(
            "the repository {} is not lower-case letters and digits in /-separated parts (joined by ., _, __ or -)",
            one_line(repository)
        )
    };
    if repository.is_empty() {
        return Err("it names no repository after the host".to_owned());
    }
    for component in repository.split('/') {
        if !component_ok(component.as_bytes()) {
            return Err(bad());
        }
    }
    Ok(())
}

/// One path component: alphanumeric runs joined by `.`, `_`, `__` or `-+`.
fn component_ok(bytes: &[u8]) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let mut i = 0;
    loop {
        let start = i;
        while i < bytes.len() && alnum(bytes[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == bytes.len() {
            return true;
        }
        let separator = i;
        match bytes[i] {
            b'.' => i += 1,
            b'_' => {
                i += 1;
                if bytes.get(i) == Some(&b'_') {
                    i += 1;
                }
            }
            b'-' => {
                while bytes.get(i) == Some(&b'-') {
                    i += 1;
                }
            }
            _ => return false,
        }
        debug_assert!(i > separator);
    }
}

/// The distribution spec's tag grammar: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
fn check_tag(tag: &str) -> Result<(), String> {
    let bytes = tag.as_bytes();
    let first_ok = bytes
        .first()
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
    let rest_ok = bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if !first_ok || !rest_ok || bytes.len() > MAX_TAG {
        return Err(format!(
            "the tag {} is not 1 to {MAX_TAG} of A-Z a-z 0-9 _ . - (not starting with . or -)",
            one_line(tag)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_round_trip() {
        for text in [
            "oci://localhost:5000/plugins/fs:1.0.0".to_owned(),
            "oci://ghcr.io/a/b-c/d__e.f:v1".to_owned(),
            format!("oci://127.0.0.1:1/x@sha256:{HEX}"),
            format!("oci://[::1]:8080/x/y:t@sha256:{HEX}"),
        ] {
            let reference: Reference = text.parse().unwrap();
            assert_eq!(reference.to_string(), text);
        }
    }

    #[test]
    fn parts_and_loopback() {
        let r: Reference = "oci://LocalHost:5000/a/b:1".parse().unwrap();
        assert_eq!(
            (r.registry(), r.host(), r.repository(), r.tag()),
            ("LocalHost:5000", "LocalHost", "a/b", Some("1"))
        );
        assert!(r.is_loopback());
        for (text, loopback) in [
            ("oci://127.3.4.5/a:1", true),
            ("oci://[::1]:99/a:1", true),
            ("oci://128.0.0.1/a:1", false),
            ("oci://[::2]/a:1", false),
            ("oci://localhost.example.com/a:1", false),
            ("oci://example.com/a:1", false),
            // The core's rule: what the address is, not how it is spelled.
            ("oci://[::ffff:127.0.0.1]/a:1", true),
            ("oci://2130706433:5000/a:1", true),
            ("oci://0x7f.1/a:1", true),
            ("oci://127.0.0.1.nip.io/a:1", false),
            ("oci://foo.localhost/a:1", false),
        ] {
            assert_eq!(
                text.parse::<Reference>().unwrap().is_loopback(),
                loopback,
                "{text}"
            );
        }
    }

    #[test]
    fn a_reference_that_reorders_text_is_shown_escaped() {
        // U+202E would make the rest of the line read backwards.
        let text = "oci://host/a\u{202e}1:gat\u{2066}";
        let error = text.parse::<Reference>().unwrap_err();
        let shown = error.to_string();
        assert!(!shown.contains(['\u{202e}', '\u{2066}', '\n']), "{shown:?}");
        assert!(shown.contains("a\\u{202e}1:gat\\u{2066}"), "{shown}");
        let tag = "oci://host/a:t\u{202e}g".parse::<Reference>().unwrap_err();
        assert!(!tag.to_string().contains('\u{202e}'), "{tag}");
    }

    #[test]
    fn bad_references_say_why() {
        for (text, why) in [
            ("http://localhost/a:1", "scheme is http"),
            ("oci://", "no repository"),
            ("oci://host", "no repository"),
            ("oci://host/", "no repository"),
            ("oci://host/repo", "name a tag or a digest"),
            ("oci://host/Repo:1", "repository Repo"),
            ("oci://host/a//b:1", "repository"),
            ("oci://host/a-:1", "repository"),
            ("oci://host/a___b:1", "repository"),
            ("oci://host/a:.x", "tag .x"),
            ("oci://host/a@sha256:ABC", "not a digest"),
            ("oci://host/a@md5:abc", "not a digest"),
            ("oci://host:0/a:1", "port 0"),
            ("oci://host:x/a:1", "port x"),
            ("oci://ho_st/a:1", "host ho_st"),
            ("oci://[zz]/a:1", "IPv6"),
        ] {
            let error = text.parse::<Reference>().unwrap_err().to_string();
            assert!(error.contains(why), "{text}: {error}");
            assert!(!error.contains('\n'));
        }
        let long = format!("oci://h/{}:1", "a".repeat(300));
        assert!(
            long.parse::<Reference>()
                .unwrap_err()
                .to_string()
                .contains("longer than")
        );
        let tag = format!("oci://h/a:{}", "t".repeat(129));
        assert!(tag.parse::<Reference>().is_err());
    }

    #[test]
    fn digests_are_strict() {
        let digest: Digest = format!("sha256:{HEX}").parse().unwrap();
        assert_eq!(digest.to_string(), format!("sha256:{HEX}"));
        assert_eq!(
            Digest::of(b"").hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        for bad in [
            "sha256:",
            "sha512:00",
            &format!("sha256:{}", &HEX[1..]),
            &format!("sha256:{}", HEX.to_uppercase()),
        ] {
            assert!(bad.parse::<Digest>().is_err(), "{bad}");
        }
    }
}
