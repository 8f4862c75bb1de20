//! Unit tests of exec and net grants: programs resolved on a fake `PATH`
//! of temporary directories, URLs parsed by the `url` crate as callers do.

use std::ffi::OsString;
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};

use url::Url;

use super::*;

/// Writes a file at `path` with `mode`, creating its directory.
fn file(path: &Path, mode: u32) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_owned()
}

/// An executable file.
fn program(path: &Path) -> PathBuf {
    file(path, 0o755)
}

/// A `PATH` value of `dirs`, in order.
fn path_of(dirs: &[&Path]) -> OsString {
    std::env::join_paths(dirs).unwrap()
}

/// `target` as a path relative to the current directory (`../../tmp/x`).
fn relative_to_cwd(target: &Path) -> PathBuf {
    let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
    let mut up = PathBuf::new();
    for _ in cwd.components().skip(1) {
        up.push("..");
    }
    up.join(target.strip_prefix("/").unwrap())
}

fn resolve_on(written: &str, path: &OsString) -> Result<ExecGrant, String> {
    ExecGrant::resolve(written, Path::new("/nonexistent-base"), Some(path))
}

fn url(text: &str) -> Url {
    Url::parse(text).unwrap()
}

fn grant(text: &str) -> NetGrant {
    NetGrant::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

// ---- exec: resolution ----

#[test]
fn a_bare_name_resolves_to_the_first_executable_file_on_path() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("first"), dir.path().join("second"));
    let wanted = program(&first.join("tool"));
    program(&second.join("tool"));
    let grant = resolve_on("tool", &path_of(&[&first, &second])).unwrap();
    assert_eq!(grant.program(), wanted);
    assert_eq!(grant.written(), "tool");
    assert_eq!(grant.canonical(), wanted.canonicalize().unwrap());
}

#[test]
fn a_non_executable_file_on_path_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, bin) = (dir.path().join("plain"), dir.path().join("bin"));
    file(&plain.join("tool"), 0o644);
    let wanted = program(&bin.join("tool"));
    let grant = resolve_on("tool", &path_of(&[&plain, &bin])).unwrap();
    assert_eq!(grant.program(), wanted);

    // With nothing else, the error says which file was passed over and why.
    let err = resolve_on("tool", &path_of(&[&plain])).unwrap_err();
    let shown = plain.join("tool");
    assert_eq!(
        err,
        format!(
            "program \"tool\" was not found on PATH ({} is not executable): install it, or give its path",
            shown.display()
        )
    );
}

#[test]
fn a_directory_named_like_the_program_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let (dirs, bin) = (dir.path().join("dirs"), dir.path().join("bin"));
    std::fs::create_dir_all(dirs.join("tool")).unwrap();
    let wanted = program(&bin.join("tool"));
    let grant = resolve_on("tool", &path_of(&[&dirs, &bin])).unwrap();
    assert_eq!(grant.program(), wanted);

    let err = resolve_on("tool", &path_of(&[&dirs])).unwrap_err();
    assert!(err.contains("is a directory, not a program"), "{err}");
}

#[test]
fn a_name_on_no_directory_of_path_is_an_error_that_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let err = resolve_on("no-such-tool", &path_of(&[dir.path()])).unwrap_err();
    assert_eq!(
        err,
        "program \"no-such-tool\" was not found on PATH: install it, or give its path"
    );
    let err = ExecGrant::resolve("tool", dir.path(), None).unwrap_err();
    assert!(err.contains("PATH has no absolute directory"), "{err}");
}

#[test]
fn relative_and_empty_path_entries_are_not_searched() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    program(&bin.join("tool"));
    let relative = relative_to_cwd(&bin);
    assert!(
        relative.join("tool").is_file(),
        "the relative entry reaches it"
    );
    let mut path = OsString::from(":");
    path.push(relative.as_os_str());
    let err = resolve_on("tool", &path).unwrap_err();
    assert!(err.contains("PATH has no absolute directory"), "{err}");
}

#[test]
fn a_path_is_relative_to_the_config_directory_and_made_absolute() {
    let dir = tempfile::tempdir().unwrap();
    let wanted = program(&dir.path().join("bin/tool"));
    let empty = path_of(&[]);
    let grant = ExecGrant::resolve("bin/tool", dir.path(), Some(&empty)).unwrap();
    assert_eq!(grant.program(), wanted);
    assert_eq!(grant.written(), "bin/tool");

    // A relative config directory still gives an absolute program.
    let base = relative_to_cwd(dir.path());
    let grant = ExecGrant::resolve("./bin/tool", &base, None).unwrap();
    assert!(
        grant.program().is_absolute(),
        "{}",
        grant.program().display()
    );
    assert_eq!(grant.canonical(), wanted.canonicalize().unwrap());

    // An absolute path ignores the config directory.
    let grant = ExecGrant::resolve(wanted.to_str().unwrap(), Path::new("/elsewhere"), None);
    assert_eq!(grant.unwrap().program(), wanted);
}

#[test]
fn a_path_must_be_an_executable_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    file(&dir.path().join("plain"), 0o644);
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    for (written, why) in [
        ("./plain", "is not executable"),
        ("./folder", "is a directory, not a program"),
        ("./missing", "does not exist"),
        ("/dev/null", "is not a regular file"),
    ] {
        let err = ExecGrant::resolve(written, dir.path(), None).unwrap_err();
        assert!(
            err.starts_with(&format!("program {written:?} (")) && err.contains(why),
            "{written}: {err}"
        );
        assert!(
            err.ends_with(": give the path of an executable file"),
            "{err}"
        );
    }
    let err = ExecGrant::resolve("", dir.path(), None).unwrap_err();
    assert!(err.contains("names no program"), "{err}");
}

#[test]
fn a_symlink_is_run_by_its_own_path_and_matched_by_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let target = program(&dir.path().join("real/multi"));
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    symlink(&target, bin.join("applet")).unwrap();
    let grant = resolve_on("applet", &path_of(&[&bin])).unwrap();
    assert_eq!(grant.program(), bin.join("applet"), "not followed");
    assert_eq!(grant.canonical(), target.canonicalize().unwrap());
}

// ---- exec: matching ----

#[test]
fn a_bare_name_and_an_absolute_path_to_the_same_file_match_one_grant() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    let tool = program(&bin.join("tool"));
    let path = path_of(&[&bin]);
    let by_name = [resolve_on("tool", &path).unwrap()];
    let by_path = [resolve_on(tool.to_str().unwrap(), &path).unwrap()];
    for grants in [&by_name, &by_path] {
        for command in ["tool", tool.to_str().unwrap()] {
            let found = find_program(grants, command, Some(&path));
            assert_eq!(found, Ok(&grants[0]), "{command}");
        }
    }
}

#[test]
fn a_symlink_to_a_granted_file_is_allowed_and_runs_the_grant() {
    let dir = tempfile::tempdir().unwrap();
    let tool = program(&dir.path().join("real/tool"));
    let links = dir.path().join("links");
    std::fs::create_dir(&links).unwrap();
    symlink(&tool, links.join("alias")).unwrap();
    let grants = [resolve_on(tool.to_str().unwrap(), &path_of(&[])).unwrap()];
    let found = find_program(&grants, "alias", Some(&path_of(&[&links]))).unwrap();
    assert_eq!(found.program(), tool);
    let via_link = links.join("alias");
    let found = find_program(&grants, via_link.to_str().unwrap(), None).unwrap();
    assert_eq!(found.program(), tool);
}

#[test]
fn a_granted_name_resolving_to_another_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (granted, other) = (dir.path().join("granted"), dir.path().join("other"));
    program(&granted.join("python3"));
    let impostor = program(&other.join("python3"));
    let grants = [resolve_on("python3", &path_of(&[&granted])).unwrap()];
    let denied = find_program(&grants, "python3", Some(&path_of(&[&other, &granted])));
    let denied = denied.unwrap_err();
    assert_eq!(denied.resolved.as_deref(), Some(impostor.as_path()));
    assert_eq!(
        denied.to_string(),
        format!(
            "program \"python3\" ({}) is not granted: add exec = [{{ program = \"python3\" }}] to the plugin's grants",
            impostor.display()
        )
    );
    assert_eq!(denied.suggestion(), "exec = [{ program = \"python3\" }]");

    // A symlink to an ungranted file, under a granted file's name, too.
    let links = dir.path().join("links");
    std::fs::create_dir(&links).unwrap();
    symlink(&impostor, links.join("python3")).unwrap();
    let denied = find_program(&grants, "python3", Some(&path_of(&[&links]))).unwrap_err();
    assert_eq!(denied.resolved, Some(links.join("python3")));
}

#[test]
fn a_relative_command_is_refused_even_when_its_file_is_granted() {
    let dir = tempfile::tempdir().unwrap();
    let tool = program(&dir.path().join("bin/tool"));
    let grants = [ExecGrant::resolve("bin/tool", dir.path(), None).unwrap()];
    let relative = relative_to_cwd(&tool);
    let command = relative.to_str().unwrap();
    assert!(Path::new(command).is_file(), "it reaches the granted file");
    let denied = find_program(&grants, command, None).unwrap_err();
    assert_eq!(denied.resolved, None);
    assert!(
        denied
            .to_string()
            .contains("is a relative path, which is never granted"),
        "{denied}"
    );
}

#[test]
fn a_missing_command_says_it_was_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_of(&[dir.path()]);
    let denied = find_program(&[], "nowhere", Some(&path)).unwrap_err();
    assert_eq!(denied.resolved, None);
    assert_eq!(
        denied.to_string(),
        "program \"nowhere\" was not found on PATH: install it, then add exec = [{ program = \"nowhere\" }] to the plugin's grants"
    );
    let denied = find_program(&[], "/no/such/program", Some(&path)).unwrap_err();
    assert!(
        denied.to_string().contains("is not an executable file"),
        "{denied}"
    );
}

#[test]
fn a_suggestion_is_one_line_of_toml_naming_the_command_exactly() {
    let command = "we\"ird\\name\nwith\u{1b}controls";
    let denied = find_program(&[], command, None).unwrap_err();
    assert!(!denied.to_string().contains(['\n', '\u{1b}']), "{denied}");
    let suggestion = denied.suggestion();
    assert!(!suggestion.contains(['\n', '\u{1b}']), "{suggestion}");
    let table: toml::Table = toml::from_str(&suggestion).unwrap();
    assert_eq!(table["exec"][0]["program"].as_str(), Some(command));
}

// ---- net: parsing ----

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
        let err = NetGrant::parse(text).map(|g| g.as_str().to_owned());
        let err = err.expect_err(text);
        assert!(err.starts_with(&format!("{text:?} ")), "{text}: {err}");
        assert!(err.contains(reason), "{text}: {err}");
        assert!(!err.contains('\n'), "{err:?}");
    }
}

// ---- net: matching ----

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

fn with_args(patterns: &[&str]) -> ExecGrant {
    let patterns: Vec<String> = patterns.iter().map(|p| (*p).to_owned()).collect();
    ExecGrant::resolve("/bin/sh", Path::new("/"), None)
        .unwrap()
        .with_args(ArgPatterns::new(&patterns).unwrap())
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| (*a).to_owned()).collect()
}

#[test]
fn without_patterns_any_arguments_are_allowed() {
    let grant = ExecGrant::resolve("/bin/sh", Path::new("/"), None).unwrap();
    assert!(grant.args().is_none());
    assert_eq!(grant.check_args(&args(&["-c", "anything; at all"])), Ok(()));
}

#[test]
fn every_argument_must_match_a_pattern_in_full() {
    let grant = with_args(&["status", "log", "--oneline", "-n[0-9]{1,3}"]);
    assert_eq!(
        grant.check_args(&args(&["log", "--oneline", "-n20"])),
        Ok(())
    );
    assert_eq!(grant.check_args(&[]), Ok(()));
    // Anchored: a pattern never matches part of an argument.
    let err = grant
        .check_args(&args(&["log", "-n20; rm -rf /"]))
        .unwrap_err();
    assert_eq!(
        err,
        "argument 2 \"-n20; rm -rf /\" of program \"/bin/sh\" matches none of its grant's args patterns [\"status\", \"log\", \"--oneline\", \"-n[0-9]{1,3}\"]: call it with allowed arguments, or add a pattern to exec = [{ program = \"/bin/sh\", args = [...] }]"
    );
    assert!(grant.check_args(&args(&["statusx"])).is_err());
    assert!(grant.check_args(&args(&["xstatus"])).is_err());
    // An alternation in a pattern stays inside its anchors.
    let grant = with_args(&["a|b"]);
    assert_eq!(grant.check_args(&args(&["a", "b"])), Ok(()));
    assert!(grant.check_args(&args(&["ab"])).is_err());
    assert!(grant.check_args(&args(&["a\nb"])).is_err());
    // A pattern cannot close the group it is put in.
    let err = ArgPatterns::new(&["a)|(b".to_owned()]).unwrap_err();
    assert!(
        err.starts_with("argument pattern \"a)|(b\" does not compile"),
        "{err}"
    );
}

#[test]
fn an_empty_pattern_list_allows_no_arguments() {
    let grant = with_args(&[]);
    assert_eq!(grant.check_args(&[]), Ok(()));
    assert!(grant.check_args(&args(&[""])).is_err());
}

#[test]
fn patterns_are_bounded_in_number_and_size() {
    let many: Vec<String> = (0..=ArgPatterns::MAX_PATTERNS)
        .map(|i| i.to_string())
        .collect();
    assert!(ArgPatterns::new(&many).unwrap_err().contains("at most 256"));
    let huge = ArgPatterns::new(&["\\w{1000}{1000}".to_owned()]).unwrap_err();
    assert!(
        huge.starts_with("argument pattern \"\\\\w{1000}{1000}\" does not compile: "),
        "{huge}"
    );
    assert!(!huge.contains('\n'), "{huge}");
}
