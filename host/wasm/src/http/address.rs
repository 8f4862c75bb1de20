//! Which IP addresses are special: not a public unicast destination on the
//! internet, so reaching one from a plugin needs a grant that names it.
//!
//! Invariant: an IPv6 address that embeds an IPv4 one (IPv4-mapped
//! `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`,
//! 6to4 `2002::/16`) is judged as the IPv4 address it carries, so no
//! spelling of `127.0.0.1` or `169.254.169.254` passes as public.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not a public destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Special {
    /// `127.0.0.0/8`, `::1`: this machine.
    Loopback,
    /// `169.254.0.0/16`, `fe80::/10`: the local link, where cloud metadata
    /// services (`169.254.169.254`) live.
    LinkLocal,
    /// RFC 1918 (`10/8`, `172.16/12`, `192.168/16`), unique local
    /// `fc00::/7`, site-local `fec0::/10`: a private network.
    Private,
    /// `100.64.0.0/10`: carrier-grade NAT, private to a provider.
    SharedAddressSpace,
    /// `0.0.0.0/8`, `::`: unspecified ("this host" on Linux).
    Unspecified,
    /// `224.0.0.0/4`, `ff00::/8`, `255.255.255.255`.
    Multicast,
    /// `240.0.0.0/4`, `192.0.0.0/24`, documentation and benchmarking
    /// ranges, discard-only `100::/64`: not routable destinations.
    Reserved,
}

impl fmt::Display for Special {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Special::Loopback => "a loopback address",
            Special::LinkLocal => "a link-local address (cloud metadata lives there)",
            Special::Private => "a private address",
            Special::SharedAddressSpace => "a carrier-grade NAT address",
            Special::Unspecified => "the unspecified address",
            Special::Multicast => "a multicast or broadcast address",
            Special::Reserved => "a reserved address",
        })
    }
}

/// Why `ip` is special, or `None` for a public unicast address.
pub fn special(ip: IpAddr) -> Option<Special> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => special_v4(v4),
            None => special_v6(v6),
        },
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<Special> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (127, ..) => Special::Loopback,
        (169, 254, _) => Special::LinkLocal,
        (10, ..) | (192, 168, _) => Special::Private,
        (172, b, _) if (16..32).contains(&b) => Special::Private,
        (100, b, _) if (64..128).contains(&b) => Special::SharedAddressSpace,
        (0, ..) => Special::Unspecified,
        (224..=239, ..) => Special::Multicast,
        _ if ip.is_broadcast() => Special::Multicast,
        (240..=255, ..) => Special::Reserved,
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Special::Reserved,
        (198, 18 | 19, _) => Special::Reserved,
        _ => return None,
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<Special> {
    let s = ip.segments();
    Some(if ip.is_loopback() {
        Special::Loopback
    } else if ip.is_unspecified() {
        Special::Unspecified
    } else if s[0] & 0xffc0 == 0xfe80 {
        Special::LinkLocal
    } else if s[0] & 0xfe00 == 0xfc00 || s[0] & 0xffc0 == 0xfec0 {
        Special::Private
    } else if s[0] & 0xff00 == 0xff00 {
        Special::Multicast
    } else if (s[0] == 0x2001 && s[1] == 0x0db8) || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) {
        Special::Reserved
    } else {
        return None;
    })
}

/// The IPv4 address an IPv6 address carries, for the forms that reach an
/// IPv4 host: mapped, compatible (deprecated, still routed by some
/// stacks), NAT64 and 6to4.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let low = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        // `::a.b.c.d`, but not `::` and `::1` (judged as IPv6 themselves).
        [0, 0, 0, 0, 0, 0, hi, lo] if (hi, lo) > (0, 1) => Some(low(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        _ => None,
    }
}
