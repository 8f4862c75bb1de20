//! Which hosts are loopback: the one rule every part of the host uses to
//! decide that plain HTTP to a host is allowed because nothing leaves this
//! machine (a registry on `localhost`, an identity provider on
//! `127.0.0.1`).
//!
//! The rule, for a host as a URL names it:
//!
//! - an IPv4 address in `127.0.0.0/8` (the whole loopback net: every
//!   address in it is this machine, `127.0.0.2` as much as `127.0.0.1`);
//! - the IPv6 address `::1`, with or without brackets, and an IPv4-mapped
//!   IPv6 address of a loopback IPv4 one (`::ffff:127.0.0.1`), which a
//!   dual-stack socket connects to as that IPv4 address;
//! - the name `localhost` in any case, which the system's hosts file
//!   answers; not `localhost.` (a fully qualified name a resolver may send
//!   to DNS), not `foo.localhost` (RFC 6761 asks resolvers to answer it
//!   with loopback, but not every resolver does), and no other name, since
//!   a name such as `127.0.0.1.nip.io` or `localhost.example.com` resolves
//!   to whatever its DNS says.
//!
//! Invariant: a host is judged as what a connection to it reaches, never
//! by its spelling. A host given as text is parsed as a URL's host is (the
//! WHATWG URL standard, which `reqwest` and `hyper` connect by), so a
//! non-canonical IPv4 form is the address it denotes: `0x7f.1`,
//! `2130706433` and `127.1` are `127.0.0.1`, and loopback; `１２７.０.０.１`
//! (full-width digits) is too. An IPv6 address that carries an IPv4 one in
//! any other way (IPv4-compatible `::127.0.0.1`, NAT64, 6to4) is not
//! loopback: a packet to it leaves the machine. Nothing here resolves a
//! name or touches the network.
//!
//! OAuth uses this rule for an identity provider's issuer and token
//! endpoint over HTTP. A login's own redirect URI is not judged by it: the
//! host writes that itself, as the literal `http://127.0.0.1:PORT/callback`
//! that RFC 8252 (section 7.3) recommends, and listens on that address only.
//!
//! This is the rule for allowing (plain HTTP is allowed because traffic
//! stays here). Deciding what a plugin may not reach without a grant is
//! another rule, stricter in the other direction, and lives with the
//! outbound HTTP of the `wasm` crate (which judges every IPv6 form that
//! embeds an IPv4 address as that address).

use std::net::{IpAddr, Ipv6Addr};

/// Whether `ip` is a loopback address: in `127.0.0.0/8`, `::1`, or an
/// IPv4-mapped address of one in `127.0.0.0/8` (`::ffff:127.0.0.1`).
pub fn is_loopback_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Whether a URL's parsed host is loopback: a loopback address (see
/// [`is_loopback_ip`]) or the name `localhost` (in any case; `url` has
/// already lowered it).
pub fn is_loopback<S: AsRef<str>>(host: &url::Host<S>) -> bool {
    match host {
        url::Host::Domain(name) => name.as_ref().eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => is_loopback_ip(IpAddr::V4(*ip)),
        url::Host::Ipv6(ip) => is_loopback_ip(IpAddr::V6(*ip)),
    }
}

/// Whether `host`, the host part of a URL or a registry's address without
/// its port (`localhost`, `127.0.0.1`, `[::1]`; a bare `::1` too), is
/// loopback. It is parsed as a URL's host is, so every spelling of an
/// address counts as that address; text that is no host is not loopback.
pub fn is_loopback_host(host: &str) -> bool {
    if let Ok(v6) = host.parse::<Ipv6Addr>() {
        return is_loopback_ip(IpAddr::V6(v6));
    }
    url::Host::parse(host).is_ok_and(|parsed| is_loopback(&parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_rule() {
        for (host, loopback) in [
            // The loopback net, all of it.
            ("127.0.0.1", true),
            ("127.0.0.2", true),
            ("127.255.255.254", true),
            ("126.255.255.255", false),
            ("128.0.0.1", false),
            ("0.0.0.0", false),
            // IPv6, bracketed as in a URL or bare.
            ("[::1]", true),
            ("::1", true),
            ("[0:0::1]", true),
            ("[::2]", false),
            ("[::]", false),
            // IPv4-mapped: the IPv4 address it maps; no other embedding.
            ("[::ffff:127.0.0.1]", true),
            ("::ffff:127.0.0.1", true),
            ("[::ffff:7f00:2]", true),
            ("[::ffff:10.0.0.1]", false),
            ("[::127.0.0.1]", false),
            ("[64:ff9b::7f00:1]", false),
            ("[2002:7f00:1::]", false),
            // The name `localhost`, in any case, and no other.
            ("localhost", true),
            ("LOCALHOST", true),
            ("LocalHost", true),
            ("localhost.", false),
            ("foo.localhost", false),
            ("localhost.example.com", false),
            ("127.0.0.1.nip.io", false),
            ("localhost6", false),
            ("example.com", false),
            // Non-canonical IPv4 forms are the address they denote.
            ("0x7f.1", true),
            ("2130706433", true),
            ("127.1", true),
            ("0177.0.0.1", true),
            ("0x7f000001", true),
            ("\u{ff11}\u{ff12}\u{ff17}.\u{ff10}.\u{ff10}.\u{ff11}", true),
            ("0x80.1", false),
            ("2147483649", false),
            // Not a host at all.
            ("", false),
            ("[::1", false),
            ("127.0.0.1:80", false),
            ("local host", false),
        ] {
            assert_eq!(is_loopback_host(host), loopback, "{host:?}");
        }
    }

    #[test]
    fn a_parsed_url_is_judged_by_the_same_rule() {
        for (url, loopback) in [
            ("http://127.0.0.2:8080/", true),
            ("http://[::1]/", true),
            ("http://[::ffff:127.0.0.1]/", true),
            ("http://LOCALHOST/", true),
            ("http://0x7f.1/", true),
            ("http://2130706433/", true),
            ("http://localhost./", false),
            ("http://foo.localhost/", false),
            ("http://127.0.0.1.nip.io/", false),
            ("http://localhost.example.com/", false),
        ] {
            let parsed = url::Url::parse(url).unwrap();
            let host = parsed.host().unwrap();
            assert_eq!(is_loopback(&host), loopback, "{url}");
            assert_eq!(is_loopback(&host.to_owned()), loopback, "{url}");
            assert_eq!(
                is_loopback_host(parsed.host_str().unwrap()),
                loopback,
                "{url}"
            );
        }
    }
}
