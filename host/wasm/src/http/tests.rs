use std::net::IpAddr;

use super::address::{Special, special};
use super::send::target;
use tiny_harness_sandbox::grant::NetGrant;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn special_addresses_are_recognised_in_every_spelling() {
    let cases = [
        ("127.0.0.1", Some(Special::Loopback)),
        ("127.255.0.9", Some(Special::Loopback)),
        ("::1", Some(Special::Loopback)),
        ("::ffff:127.0.0.1", Some(Special::Loopback)),
        ("::127.0.0.1", Some(Special::Loopback)),
        ("64:ff9b::7f00:1", Some(Special::Loopback)),
        ("2002:7f00:1::", Some(Special::Loopback)),
        ("169.254.169.254", Some(Special::LinkLocal)),
        ("::ffff:169.254.169.254", Some(Special::LinkLocal)),
        ("fe80::1", Some(Special::LinkLocal)),
        ("10.1.2.3", Some(Special::Private)),
        ("172.16.0.1", Some(Special::Private)),
        ("172.31.255.255", Some(Special::Private)),
        ("192.168.1.1", Some(Special::Private)),
        ("fd00::1", Some(Special::Private)),
        ("fc00::1", Some(Special::Private)),
        ("100.64.0.1", Some(Special::SharedAddressSpace)),
        ("0.0.0.0", Some(Special::Unspecified)),
        ("::", Some(Special::Unspecified)),
        ("224.0.0.1", Some(Special::Multicast)),
        ("255.255.255.255", Some(Special::Multicast)),
        ("ff02::1", Some(Special::Multicast)),
        ("240.0.0.1", Some(Special::Reserved)),
        ("2001:db8::1", Some(Special::Reserved)),
        ("93.184.215.14", None),
        ("172.32.0.1", None),
        ("100.128.0.1", None),
        ("2606:4700::1111", None),
        ("::ffff:8.8.8.8", None),
    ];
    for (text, expected) in cases {
        assert_eq!(special(ip(text)), expected, "{text}");
    }
}

#[test]
fn hosts_in_non_standard_forms_are_refused_before_the_grants() {
    let grants = [NetGrant::parse("http://127.0.0.1:*").unwrap()];
    for written in [
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0177.0.0.1/",
        "http://127.1/",
        "http://127.000.000.001/",
    ] {
        let uri: http::Uri = written.parse().unwrap();
        let err = target(&uri, &grants).unwrap_err().to_string();
        assert!(
            err.contains("non-standard form") && err.contains("127.0.0.1"),
            "{written}: {err}"
        );
    }
    let uri: http::Uri = "http://127.0.0.1:8080/x?y".parse().unwrap();
    assert!(target(&uri, &grants).is_ok());
}

#[test]
fn ipv6_forms_are_compared_as_addresses_and_need_their_own_grant() {
    let grants = [NetGrant::parse("http://127.0.0.1:*").unwrap()];
    let uri: http::Uri = "http://[::ffff:127.0.0.1]:80/".parse().unwrap();
    let err = target(&uri, &grants).unwrap_err().to_string();
    assert!(err.contains("is not granted"), "{err}");
    let grants = [NetGrant::parse("http://[::1]:*").unwrap()];
    let uri: http::Uri = "http://[0:0::1]:80/".parse().unwrap();
    assert!(target(&uri, &grants).is_ok());
}

#[test]
fn userinfo_is_refused() {
    let grants = [NetGrant::parse("http://example.com").unwrap()];
    let uri: http::Uri = "http://user:pw@example.com/".parse().unwrap();
    let err = target(&uri, &grants).unwrap_err().to_string();
    assert!(err.contains("userinfo"), "{err}");
}
