//! Net grants: parsing, and URLs (parsed by the `url` crate, as callers
//! do) allowed or refused.

use url::Url;

use super::super::*;

fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
}

fn grant(text: &str) -> NetGrant {
    NetGrant::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

// ---- parsing ----

#[test]
fn every_grant_form_parses_and_allows_what_it_says() {
    for (text, allowed, refused) in [
        (
            "http://127.0.0.1:*",
            &[
                "http://127.0.0.1:1/",
                "http://127.0.0.1:65535/x",
                "http://127.0.0.1/",
            ][..],
            &["http://127.0.0.2:80/", "https://127.0.0.1:443/"][..],
        ),
        (
            "https://*.example.com:443",
            &["https://api.example.com/", "https://a.b.example.com:443/v1"],
            &["https://example.com/", "https://api.example.com:8443/"],
        ),
        (
            "https://api.example.com",
            &["https://api.example.com/v1", "https://api.example.com:443/"],
            &["https://api.example.com:8443/", "https://example.com/"],
        ),
        (
            "https://api.example.com/",
            &["https://api.example.com/any/path?q=1"],
            &["https://other.example.com/"],
        ),
        (
            "http://[::1]:8080",
            &["http://[::1]:8080/mcp", "http://[0:0::1]:8080/"],
            &["http://[::1]:8081/", "http://[::2]:8080/"],
        ),
        (
            "http://localhost:3000",
            &["http://localhost:3000/", "http://LocalHost:3000/"],
            &["http://127.0.0.1:3000/", "http://localhost:3001/"],
        ),
    ] {
        let grant = grant(text);
        assert_eq!(grant.as_str(), text);
        for u in allowed {
            assert!(grant.allows(&url(u)), "{text} should allow {u}");
        }
        for u in refused {
            assert!(!grant.allows(&url(u)), "{text} should refuse {u}");
        }
    }
}

#[test]
fn grants_are_case_insensitive_and_names_are_lowercased() {
    let upper = grant("HTTPS://API.Example.COM:8443");
    assert_eq!(upper.as_str(), "HTTPS://API.Example.COM:8443", "as written");
    assert!(upper.allows(&url("https://api.example.com:8443/")));
    assert!(upper.allows(&url("https://API.EXAMPLE.com:8443/")));
    // Internationalised names are compared in their ASCII form.
    assert!(grant("https://bücher.example").allows(&url("https://xn--bcher-kva.example/")));
}

#[test]
fn malformed_grants_are_refused_with_the_reason() {
    for (text, reason) in [
        ("ftp://example.com", "scheme other than http or https"),
        ("ws://example.com:80", "scheme other than http or https"),
        ("example.com:80", "is not scheme://host:port"),
        ("http://example.com/api", "has a path (/api)"),
        ("http://example.com?x=1", "has a query"),
        ("http://example.com/?x=1", "has a query"),
        ("http://example.com#top", "has a fragment"),
        ("http://user:pw@example.com", "has userinfo"),
        ("http://@example.com", "has userinfo"),
        ("http://", "has no host"),
        ("http://:8080", "has no host"),
        ("http://example.com:", "has an empty port"),
        ("http://example.com:0", "a port is a number from 1 to 65535"),
        (
            "http://example.com:65536",
            "a port is a number from 1 to 65535",
        ),
        (
            "http://example.com:+80",
            "a port is a number from 1 to 65535",
        ),
        (
            "http://example.com:8*",
            "a port is a number from 1 to 65535",
        ),
        ("http://*:80", "has * in its host"),
        ("http://*", "has * in its host"),
        ("http://*example.com", "has * in its host"),
        ("http://api.*.example.com", "has * in its host"),
        ("http://*.*.example.com", "has * in its host"),
        ("http://example.*", "has * in its host"),
        ("*://example.com", "scheme other than http or https"),
        ("http://*.127.0.0.1", "reads as an IPv4 address"),
        ("http://127.1", "reads as an IPv4 address"),
        ("http://0x7f.0.0.1", "reads as an IPv4 address"),
        ("http://010.0.0.1", "reads as an IPv4 address"),
        ("http://::1:8080", "write an IPv6 address in brackets"),
        ("http://[::1", "unclosed ["),
        ("http://[::1]x", "something other than :port"),
        ("http://[::1]:", "has an empty port"),
        ("http://[nope]:80", "not an IPv6 address"),
        ("http://[127.0.0.1]:80", "not an IPv6 address"),
        ("http://exa%6dple.com", "not a DNS name"),
        ("http://example.com.", "no empty label or trailing dot"),
        ("http://a..example.com", "no empty label or trailing dot"),
        ("http://example .com", "space or control character"),
        ("http://example.com\n", "space or control character"),
    ] {
        let err = NetGrant::parse(text)
            .map(|g| g.as_str().to_owned())
            .map_err(|e| e.to_string());
        let err = err.expect_err(text);
        assert!(err.starts_with(&format!("{text:?} ")), "{text}: {err}");
        assert!(err.contains(reason), "{text}: {err}");
        assert!(!err.contains('\n'), "{err:?}");
    }
}

// ---- matching ----

#[test]
fn a_subdomain_grant_allows_names_below_it_only() {
    let grant = grant("https://*.example.com");
    for allowed in [
        "https://a.example.com/",
        "https://a.b.c.example.com/",
        "https://A.EXAMPLE.com/",
    ] {
        assert!(grant.allows(&url(allowed)), "{allowed}");
    }
    for refused in [
        "https://example.com/",
        "https://badexample.com/",
        "https://a.badexample.com/",
        "https://example.com.evil.test/",
        "https://.example.com/",
        "https://a..example.com/",
        "https://example.com./",
        "http://a.example.com:443/",
    ] {
        assert!(!grant.allows(&url(refused)), "{refused}");
    }
}

#[test]
fn ports_are_explicit_any_or_the_schemes_default() {
    let http = grant("http://example.com");
    assert!(http.allows(&url("http://example.com/")));
    assert!(http.allows(&url("http://example.com:80/")));
    assert!(!http.allows(&url("http://example.com:8080/")));
    let https = grant("https://example.com");
    assert!(https.allows(&url("https://example.com/")));
    assert!(!https.allows(&url("https://example.com:80/")));
    let explicit = grant("http://example.com:8080");
    assert!(!explicit.allows(&url("http://example.com/")));
    assert!(explicit.allows(&url("http://example.com:8080/")));
    let any = grant("https://example.com:*");
    assert!(any.allows(&url("https://example.com/")));
    assert!(any.allows(&url("https://example.com:1/")));
}

#[test]
fn the_scheme_must_match() {
    assert!(!grant("http://example.com:443").allows(&url("https://example.com/")));
    assert!(!grant("https://example.com:80").allows(&url("http://example.com/")));
    assert!(!grant("http://example.com:*").allows(&url("ws://example.com/")));
}

#[test]
fn ip_literals_are_compared_as_addresses_and_never_as_names() {
    let v6 = grant("http://[0:0:0:0:0:0:0:1]:*");
    assert!(v6.allows(&url("http://[::1]:3000/")));
    assert!(!v6.allows(&url("http://[::ffff:127.0.0.1]:3000/")));
    assert!(!v6.allows(&url("http://127.0.0.1:3000/")));
    assert!(!v6.allows(&url("http://localhost:3000/")));
    let v4 = grant("http://127.0.0.1:*");
    // The url crate reads these as 127.0.0.1, as a client would connect.
    assert!(v4.allows(&url("http://127.1:3000/")));
    assert!(v4.allows(&url("http://2130706433:3000/")));
    assert!(!v4.allows(&url("http://localhost:3000/")));
    assert!(!v4.allows(&url("http://[::ffff:127.0.0.1]:3000/")));
    assert!(!grant("http://localhost:*").allows(&url("http://127.0.0.1:3000/")));
}

#[test]
fn the_same_destination_is_recognised_however_it_is_written() {
    assert!(grant("http://Example.com").same_destination(&grant("http://example.com:80/")));
    assert!(grant("http://[::1]:*").same_destination(&grant("http://[0::1]:*")));
    assert!(!grant("http://example.com").same_destination(&grant("https://example.com")));
    assert!(!grant("http://*.example.com").same_destination(&grant("http://example.com")));
    assert!(!grant("http://example.com:*").same_destination(&grant("http://example.com")));
}

#[test]
fn find_net_returns_the_first_grant_that_allows() {
    let grants = [
        grant("http://localhost:1"),
        grant("http://127.0.0.1:*"),
        grant("http://127.0.0.1:3001"),
    ];
    let found = find_net(&grants, &url("http://127.0.0.1:3001/mcp"));
    assert_eq!(found.map(NetGrant::as_str), Ok("http://127.0.0.1:*"));
}

#[test]
fn a_refusal_hides_userinfo_query_and_fragment_and_suggests_the_grant() {
    let secret = url("http://user:s3cret@127.0.0.1:3001/mcp?token=t0ken#fr4g");
    let denied = find_net(&[grant("http://127.0.0.1:3002")], &secret).unwrap_err();
    assert_eq!(
        denied.to_string(),
        "http://127.0.0.1:3001/mcp is not granted: add net = [\"http://127.0.0.1:3001\"] to the plugin's grants"
    );
    assert_eq!(denied.url, "http://127.0.0.1:3001/mcp");
    assert_eq!(denied.suggestion(), "net = [\"http://127.0.0.1:3001\"]");
    for hidden in ["user", "s3cret", "t0ken", "fr4g"] {
        assert!(!format!("{denied:?}").contains(hidden), "{denied:?}");
    }

    // The suggestion parses as a config and allows the URL.
    for u in [
        "https://api.example.com/v1",
        "http://[::1]:8080/",
        "http://127.0.0.1:3001/mcp",
    ] {
        let u = url(u);
        let suggestion = find_net(&[], &u).unwrap_err().suggestion();
        let table: toml::Table = toml::from_str(&suggestion).unwrap();
        let text = table["net"][0].as_str().unwrap();
        assert!(grant(text).allows(&u), "{suggestion} for {u}");
    }
    let denied = find_net(&[], &url("https://api.example.com/v1")).unwrap_err();
    assert_eq!(denied.suggestion(), "net = [\"https://api.example.com\"]");
}

#[test]
fn a_url_no_grant_can_allow_says_so() {
    let denied = find_net(
        &[grant("http://example.com:*")],
        &url("ftp://example.com/f"),
    )
    .unwrap_err();
    assert_eq!(
        denied.to_string(),
        "ftp://example.com/f is not granted: only http and https URLs can be granted"
    );
    assert_eq!(denied.suggestion(), "");
}
