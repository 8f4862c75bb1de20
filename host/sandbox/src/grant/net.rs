//! `net` grants: the network destinations a plugin may reach, each
//! `scheme://host:port`.
//!
//! Invariant: a URL is allowed only if its scheme, host and port all match
//! one grant. Hosts are compared whole: a name case-insensitively, an IP
//! literal as an address (`[0:0::1]` is `[::1]`), and `*.example.com` as
//! any name ending in `.example.com` (at any depth, never `example.com`
//! itself, never `badexample.com`). A name is not an address: a grant of
//! `127.0.0.1` does not allow `localhost`, nor a grant of a name the
//! addresses it resolves to. The grammar is strict, so that what a grant
//! allows is what it reads as: no path, query, fragment or userinfo, `*`
//! only as a whole port or a leading `*.`, IPv4 only as four decimal
//! numbers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use super::toml_string;

/// A network destination a plugin may reach: `scheme://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetGrant {
    written: String,
    scheme: Scheme,
    host: HostPattern,
    port: PortPattern,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Http,
    Https,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// One DNS name, lowercased ASCII (IDNA applied).
    Name(String),
    /// Every name below this one (`*.` + the name).
    Subdomains(String),
    /// One address.
    Ip(IpAddr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortPattern {
    Any,
    Exact(u16),
}

impl NetGrant {
    /// Parses a grant: `http://127.0.0.1:*`, `https://*.example.com:443`,
    /// `https://api.example.com` (no port: the scheme's default port),
    /// `http://[::1]:8080`.
    ///
    /// The scheme is `http` or `https`. The host is a DNS name (lowercased),
    /// an IPv4 literal (four decimal numbers), a bracketed IPv6 literal, or
    /// `*.` and a DNS name (any subdomain, at any depth, not the name
    /// itself). The port is 1 to 65535, or `*` for any. A path other than
    /// empty or `/`, a query, a fragment, userinfo, a `*` anywhere else and
    /// an empty host are refused, with a one-line reason.
    pub fn parse(text: &str) -> Result<NetGrant, super::GrantError> {
        let fail = |why: &str| super::GrantError::Net {
            written: text.to_owned(),
            why: why.to_owned(),
        };
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(fail("holds a space or control character: remove it"));
        }
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(fail(
                "is not scheme://host:port: write it like \"http://127.0.0.1:8080\"",
            ));
        };
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            _ => return Err(fail("has a scheme other than http or https")),
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if tail.contains('?') {
            return Err(fail("has a query: a grant is scheme://host:port only"));
        }
        if tail.contains('#') {
            return Err(fail("has a fragment: a grant is scheme://host:port only"));
        }
        if !matches!(tail, "" | "/") {
            return Err(fail(&format!(
                "has a path ({tail}): a grant is scheme://host:port only and allows every path"
            )));
        }
        if authority.contains('@') {
            return Err(fail(
                "has userinfo (user@): a grant is scheme://host:port only; credentials do not belong in it",
            ));
        }
        let (host, port) = split_host_port(authority).map_err(|why| fail(&why))?;
        let host = host_pattern(host).map_err(|why| fail(&why))?;
        let port = match port {
            None => PortPattern::Exact(match scheme {
                Scheme::Http => 80,
                Scheme::Https => 443,
            }),
            Some("*") => PortPattern::Any,
            Some(digits) => match digits.parse::<u16>() {
                Ok(port) if port != 0 && digits.bytes().all(|b| b.is_ascii_digit()) => {
                    PortPattern::Exact(port)
                }
                _ => {
                    return Err(fail(&format!(
                        "has port {digits:?}: a port is a number from 1 to 65535, or * for any"
                    )));
                }
            },
        };
        Ok(NetGrant {
            written: text.to_owned(),
            scheme,
            host,
            port,
        })
    }

    /// The grant as written.
    pub fn as_str(&self) -> &str {
        &self.written
    }

    /// The port it allows; `None` for any (`*`).
    pub fn port(&self) -> Option<u16> {
        match self.port {
            PortPattern::Any => None,
            PortPattern::Exact(port) => Some(port),
        }
    }

    /// Whether the grant names one host literally (a name or an address),
    /// rather than every name below a domain (`*.example.com`). Only such a
    /// grant reaches a loopback, private or other special address (see
    /// the host's `http` module).
    pub fn names_host(&self) -> bool {
        !matches!(self.host, HostPattern::Subdomains(_))
    }

    /// Whether `url` is allowed: the same scheme; the same host (a name
    /// case-insensitively, an IP literal as an address, a `*.` grant any
    /// name below it); and its port (explicit, or the scheme's default)
    /// matches.
    pub fn allows(&self, url: &Url) -> bool {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        let port = match (self.port, url.port_or_known_default()) {
            (PortPattern::Any, Some(_)) => true,
            (PortPattern::Exact(granted), Some(port)) => granted == port,
            (_, None) => false,
        };
        let host = match (&self.host, url.host()) {
            (HostPattern::Name(name), Some(Host::Domain(domain))) => {
                domain.eq_ignore_ascii_case(name)
            }
            (HostPattern::Subdomains(parent), Some(Host::Domain(domain))) => {
                is_below(domain, parent)
            }
            (HostPattern::Ip(granted), Some(Host::Ipv4(ip))) => *granted == IpAddr::V4(ip),
            (HostPattern::Ip(granted), Some(Host::Ipv6(ip))) => *granted == IpAddr::V6(ip),
            _ => false,
        };
        url.scheme() == scheme && host && port
    }

    /// Whether `other` names the same destinations, however either is
    /// written (`http://Example.com` and `http://example.com:80` do).
    pub fn same_destination(&self, other: &NetGrant) -> bool {
        (self.scheme, &self.host, self.port) == (other.scheme, &other.host, other.port)
    }
}

/// The first grant allowing `url`, or why none does.
pub fn find_net<'a>(grants: &'a [NetGrant], url: &Url) -> Result<&'a NetGrant, NetDenied> {
    grants
        .iter()
        .find(|grant| grant.allows(url))
        .ok_or_else(|| NetDenied {
            url: shown(url),
            grant: matches!(url.scheme(), "http" | "https")
                .then(|| url.host_str())
                .flatten()
                .map(|host| {
                    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
                    format!("{}://{host}{port}", url.scheme())
                }),
        })
}

/// Why a URL is not allowed. Display is one line:
/// `http://127.0.0.1:3001/mcp is not granted: add net =
/// ["http://127.0.0.1:3001"] to the plugin's grants`. The URL is shown
/// without userinfo, query or fragment, which may hold secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{url} is not granted: {}", match .grant {
    Some(grant) => format!("add net = [{}] to the plugin's grants", toml_string(grant)),
    None => "only http and https URLs can be granted".to_owned(),
})]
#[non_exhaustive]
pub struct NetDenied {
    /// The URL refused, without userinfo, query or fragment.
    pub url: String,
    /// The grant that would allow it; `None` for a URL no grant can allow.
    grant: Option<String>,
}

impl NetDenied {
    /// The grant to add, as written in a config: `net =
    /// ["http://127.0.0.1:3001"]`. Empty for a URL no grant can allow (a
    /// scheme other than http or https).
    pub fn suggestion(&self) -> String {
        self.grant
            .as_deref()
            .map(|grant| format!("net = [{}]", toml_string(grant)))
            .unwrap_or_default()
    }
}

/// `url` without userinfo, query or fragment.
fn shown(url: &Url) -> String {
    if url.cannot_be_a_base() {
        return format!("{}:…", url.scheme());
    }
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// The host and the port (if any) of `authority`.
fn split_host_port(authority: &str) -> Result<(&str, Option<&str>), String> {
    if authority.starts_with('[') {
        let Some(close) = authority.find(']') else {
            return Err("has an unclosed [: write an IPv6 address as [::1]".into());
        };
        let (host, after) = authority.split_at(close + 1);
        return match after.strip_prefix(':') {
            None if after.is_empty() => Ok((host, None)),
            None => Err("has something other than :port after the IPv6 address".into()),
            Some("") => Err("has an empty port: give a port, or * for any".into()),
            Some(port) => Ok((host, Some(port))),
        };
    }
    match authority.split_once(':') {
        None => Ok((authority, None)),
        Some((_, port)) if port.contains(':') => {
            Err("has more than one colon: write an IPv6 address in brackets, as [::1]".into())
        }
        Some((_, "")) => Err("has an empty port: give a port, or * for any".into()),
        Some((host, port)) => Ok((host, Some(port))),
    }
}

fn host_pattern(host: &str) -> Result<HostPattern, String> {
    if host.is_empty() {
        return Err("has no host".into());
    }
    if let Some(inside) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inside
            .parse::<Ipv6Addr>()
            .map(|ip| HostPattern::Ip(IpAddr::V6(ip)))
            .map_err(|_| format!("has [{inside}], which is not an IPv6 address"));
    }
    if host.contains('*') {
        return match host.strip_prefix("*.") {
            Some(parent) if !parent.contains('*') => dns_name(parent)
                .map(HostPattern::Subdomains)
                .map_err(|why| format!("{why} (a *. grant takes a DNS name)")),
            _ => Err(
                "has * in its host: * stands only for a whole port, or as *. before a DNS name"
                    .into(),
            ),
        };
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Ok(HostPattern::Ip(IpAddr::V4(ip)));
    }
    dns_name(host).map(HostPattern::Name)
}

/// `name` as a lowercased ASCII DNS name (IDNA applied), or why it is not
/// one. Anything a URL parser would read as an IPv4 address (`127.1`,
/// `0x7f.0.0.1`) is refused, so that a grant never means an address it
/// does not spell out.
fn dns_name(name: &str) -> Result<String, String> {
    let plain =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') || !c.is_ascii();
    if !name.chars().all(plain) {
        return Err(format!(
            "has host {name:?}, which is not a DNS name (letters, digits, - and . only)"
        ));
    }
    let ascii = match Host::parse(name) {
        Ok(Host::Domain(ascii)) => ascii,
        Ok(_) => {
            return Err(format!(
                "has host {name:?}, which reads as an IPv4 address: write one as four decimal numbers, such as 127.0.0.1"
            ));
        }
        Err(e) => return Err(format!("has host {name:?}, which is not a DNS name ({e})")),
    };
    let labels_ok = ascii.len() <= 253
        && ascii
            .split('.')
            .all(|label| (1..=63).contains(&label.len()));
    if !labels_ok {
        return Err(format!(
            "has host {name:?}, which is not a DNS name (labels of 1 to 63 characters, no empty label or trailing dot)"
        ));
    }
    Ok(ascii)
}

/// Whether `domain` is a name below `parent`: `parent` preceded by at
/// least one non-empty label.
fn is_below(domain: &str, parent: &str) -> bool {
    let Some(cut) = domain.len().checked_sub(parent.len() + 1) else {
        return false;
    };
    let bytes = domain.as_bytes();
    bytes[cut] == b'.'
        && bytes[cut + 1..].eq_ignore_ascii_case(parent.as_bytes())
        && domain[..cut].split('.').all(|label| !label.is_empty())
}
