//! One set of checks for grants, wherever they come from: a config's
//! `grants` table, an embedder's `PluginSpec` built with the grant types'
//! constructors for `HostBuilder::plugin`, and the test harness's
//! `PluginTest`. Each refuses the same grants, in the same words (the
//! config adds its file, line and key before them), and what they accept
//! is the same set of grants.

use std::error::Error;
use std::path::Path;

use tiny_harness_host::{
    ArgPatterns, Config, DirGrant, DirMode, EnvNames, ExecGrant, GrantError, Grants, HostBuilder,
    NetGrant, PluginSpec,
};
use tiny_harness_sandbox::grant::UnusableProgram;
use tiny_harness_testing::{PluginTest, StartError};

/// What the builder's side does for one case: build the grants from
/// `base` (the config's directory) with the grant types, or fail.
type Build = fn(&Path) -> Result<Grants, Box<dyn Error>>;

/// One refusal: the `grants` table's body, the key the config blames, and
/// the same grants built by hand.
struct Case {
    what: &'static str,
    table: String,
    key: &'static str,
    build: Build,
}

fn case(what: &'static str, table: &str, key: &'static str, build: Build) -> Case {
    Case {
        what,
        table: table.to_owned(),
        key,
        build,
    }
}

/// The config at `base/agent.toml` whose only plugin has `table` as its
/// grants.
fn config(base: &Path, table: &str) -> Result<Config, String> {
    let text = format!("[plugins.p]\npath = \"p.wasm\"\n[plugins.p.grants]\n{table}\n");
    Config::parse(&base.join("agent.toml"), &text).map_err(|e| e.to_string())
}

fn path() -> Option<std::ffi::OsString> {
    std::env::var_os("PATH")
}

fn resolve(written: &str, base: &Path) -> Result<ExecGrant, Box<dyn Error>> {
    Ok(ExecGrant::resolve(written, base, path().as_deref())?)
}

fn dir(base: &Path, host: &str, guest: &str) -> Result<Grants, Box<dyn Error>> {
    let mut grants = Grants::default();
    grants.add_dir(DirGrant::new(base.join(host), guest, DirMode::ReadOnly)?)?;
    Ok(grants)
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// A temporary config directory with a subdirectory `sub`, a file `file`,
/// and the canonical path of `/bin/sh` (a second name for it).
fn base() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("file"), "").unwrap();
    let sh = Path::new("/bin/sh").canonicalize().unwrap();
    (dir, sh.display().to_string())
}

fn cases(sh: &str) -> Vec<Case> {
    vec![
        case(
            "a relative guest path",
            r#"dirs = [{ host = ".", guest = "rel" }]"#,
            "dirs.guest",
            |b| dir(b, ".", "rel"),
        ),
        case(
            "`..` in a guest path",
            r#"dirs = [{ host = ".", guest = "/w/../etc" }]"#,
            "dirs.guest",
            |b| dir(b, ".", "/w/../etc"),
        ),
        case(
            "`.` in a guest path",
            r#"dirs = [{ host = ".", guest = "/w/./x" }]"#,
            "dirs.guest",
            |b| dir(b, ".", "/w/./x"),
        ),
        case(
            "two directories at one guest path",
            r#"dirs = [{ host = ".", guest = "/w" }, { host = "sub", guest = "/w", mode = "read-write" }]"#,
            "dirs.guest",
            |b| {
                let mut grants = dir(b, ".", "/w")?;
                grants.add_dir(DirGrant::new(b.join("sub"), "/w", DirMode::ReadWrite)?)?;
                Ok(grants)
            },
        ),
        case(
            "a host path that does not exist",
            r#"dirs = [{ host = "missing", guest = "/w" }]"#,
            "dirs.host",
            |b| dir(b, "missing", "/w"),
        ),
        case(
            "a host path that is a file",
            r#"dirs = [{ host = "file", guest = "/w" }]"#,
            "dirs.host",
            |b| dir(b, "file", "/w"),
        ),
        case("an env name with `=`", r#"env = ["A=B"]"#, "env", |_| {
            let mut grants = Grants::default();
            grants.add_env("A=B")?;
            Ok(grants)
        }),
        case("an empty env name", r#"env = [""]"#, "env", |_| {
            let mut grants = Grants::default();
            grants.add_env("")?;
            Ok(grants)
        }),
        case(
            "an empty program",
            r#"exec = [{ program = "" }]"#,
            "exec",
            |b| {
                resolve("", b)?;
                Ok(Grants::default())
            },
        ),
        case(
            "a program with a NUL byte",
            r#"exec = [{ program = "sh\u0000" }]"#,
            "exec",
            |b| {
                resolve("sh\0", b)?;
                Ok(Grants::default())
            },
        ),
        case(
            "an argument pattern that does not compile",
            r#"exec = [{ program = "/bin/sh", args = ["(unclosed"] }]"#,
            "exec.args",
            |_| {
                ArgPatterns::new(&strings(&["(unclosed"]))?;
                Ok(Grants::default())
            },
        ),
        case(
            "a variable name that is not one",
            r#"exec = [{ program = "/bin/sh", env = ["A B"] }]"#,
            "exec.env",
            |_| {
                EnvNames::new(&strings(&["A B"]))?;
                Ok(Grants::default())
            },
        ),
        case(
            "the loader's variables",
            r#"exec = [{ program = "/bin/sh", env = ["LD_*"] }]"#,
            "exec.env",
            |_| {
                EnvNames::new(&strings(&["LD_*"]))?;
                Ok(Grants::default())
            },
        ),
        case(
            "one program granted twice by two names",
            &format!(r#"exec = [{{ program = "/bin/sh" }}, {{ program = "{sh}" }}]"#),
            "exec",
            |b| {
                let mut grants = Grants::default();
                let sh = Path::new("/bin/sh").canonicalize()?;
                grants
                    .add_exec(resolve("/bin/sh", b)?)?
                    .add_exec(resolve(&sh.display().to_string(), b)?)?;
                Ok(grants)
            },
        ),
        case(
            "a missing program granted twice",
            r#"exec = [{ program = "surely-no-such-program-here" }, { program = "surely-no-such-program-here" }]"#,
            "exec",
            |b| {
                let missing = || UnusableProgram::new("surely-no-such-program-here", b, "".into());
                let mut grants = Grants::default();
                grants.add_unusable(missing())?.add_unusable(missing())?;
                Ok(grants)
            },
        ),
        case(
            "a read path that does not exist",
            r#"exec = [{ program = "/bin/sh", read = ["missing"] }]"#,
            "exec.read",
            |b| {
                resolve("/bin/sh", b)?.allow_read(b.join("missing"))?;
                Ok(Grants::default())
            },
        ),
        case(
            "a socket that is a file",
            r#"exec = [{ program = "/bin/sh", sockets = ["file"] }]"#,
            "exec.sockets",
            |b| {
                resolve("/bin/sh", b)?.allow_socket(b.join("file"))?;
                Ok(Grants::default())
            },
        ),
        case(
            "a net grant with a path",
            r#"net = ["http://127.0.0.1:3000/mcp"]"#,
            "net",
            |_| {
                NetGrant::parse("http://127.0.0.1:3000/mcp")?;
                Ok(Grants::default())
            },
        ),
        case(
            "a net grant with a wildcard inside a host",
            r#"net = ["https://api.*.example.com"]"#,
            "net",
            |_| {
                NetGrant::parse("https://api.*.example.com")?;
                Ok(Grants::default())
            },
        ),
        case(
            "a net grant with port 0",
            r#"net = ["http://localhost:0"]"#,
            "net",
            |_| {
                NetGrant::parse("http://localhost:0")?;
                Ok(Grants::default())
            },
        ),
        case(
            "one destination granted twice",
            r#"net = ["http://example.com", "HTTP://Example.com:80/"]"#,
            "net",
            |_| {
                let mut grants = Grants::default();
                grants
                    .add_net(NetGrant::parse("http://example.com")?)?
                    .add_net(NetGrant::parse("HTTP://Example.com:80/")?)?;
                Ok(grants)
            },
        ),
    ]
}

#[test]
fn the_builders_grants_refuse_what_the_config_refuses_in_its_words() {
    let (base, sh) = base();
    for case in cases(&sh) {
        let config = config(base.path(), &case.table)
            .err()
            .unwrap_or_else(|| panic!("{}: the config accepted it", case.what));
        let built = (case.build)(base.path())
            .err()
            .unwrap_or_else(|| panic!("{}: the grant types accepted it", case.what));
        let expected = format!("plugins.p.grants.{}: {built}", case.key);
        assert!(
            config.ends_with(&expected),
            "{}:\n config: {config}\n built:  {expected}",
            case.what
        );
        assert!(!built.to_string().contains('\n'), "{}: {built}", case.what);
    }
}

#[test]
fn what_the_config_accepts_the_grant_types_build_the_same() {
    let (base, _) = base();
    let table = r#"dirs = [{ host = ".", guest = "/w" }, { host = "sub", guest = "/w/sub", mode = "read-write" }]
env = ["HOME", "TOKEN"]
exec = [{ program = "/bin/sh", read = ["sub"], args = ["-c", ".*"], env = ["LC_*"] }, { program = "surely-no-such-program-here" }]
net = ["http://127.0.0.1:*", "https://*.example.com"]"#;
    let loaded = config(base.path(), table).unwrap();
    let b = base.path();
    let mut built = Grants::default();
    built
        .add_dir(DirGrant::new(b, "/w", DirMode::ReadOnly).unwrap())
        .unwrap()
        .add_dir(DirGrant::new(b.join("sub"), "/w/sub", DirMode::ReadWrite).unwrap())
        .unwrap()
        .add_env("HOME")
        .unwrap()
        .add_env("TOKEN")
        .unwrap()
        .add_exec(
            resolve("/bin/sh", b)
                .unwrap()
                .allow_read(b.join("sub"))
                .unwrap()
                .with_args(ArgPatterns::new(&strings(&["-c", ".*"])).unwrap())
                .with_env(EnvNames::new(&strings(&["LC_*"])).unwrap()),
        )
        .unwrap()
        .add_net(NetGrant::parse("http://127.0.0.1:*").unwrap())
        .unwrap()
        .add_net(NetGrant::parse("https://*.example.com").unwrap())
        .unwrap();
    let grants = &loaded.plugins[0].grants;
    assert_eq!(grants.dirs(), built.dirs());
    assert_eq!(grants.env(), built.env());
    assert_eq!(grants.exec(), built.exec());
    assert_eq!(grants.net(), built.net());
    assert_eq!(grants.unusable().len(), 1);

    // And such a spec is what `HostBuilder::plugin` takes: nothing more
    // to check there, since a refused grant cannot be in it.
    let mut spec = PluginSpec::new("p", base.path().join("p.wasm"));
    spec.grants = built;
    let _builder = HostBuilder::new().plugin(spec);
}

#[tokio::test]
async fn the_test_harness_refuses_what_the_config_refuses_in_its_words() {
    let (base, _) = base();
    let b = base.path();
    let harness = |host: &Path, guest: &'static str| {
        PluginTest::new(b.join("p.wasm")).grant_dir(host.to_owned(), guest, DirMode::ReadOnly)
    };
    let cases: Vec<(PluginTest, &str, &str)> = vec![
        (
            harness(b, "rel"),
            r#"dirs = [{ host = ".", guest = "rel" }]"#,
            "dirs.guest",
        ),
        (
            harness(b, "/w/../etc"),
            r#"dirs = [{ host = ".", guest = "/w/../etc" }]"#,
            "dirs.guest",
        ),
        (
            harness(&b.join("missing"), "/w"),
            r#"dirs = [{ host = "missing", guest = "/w" }]"#,
            "dirs.host",
        ),
        (
            harness(b, "/w").temp_dir("/w", DirMode::ReadWrite),
            r#"dirs = [{ host = ".", guest = "/w" }, { host = "sub", guest = "/w" }]"#,
            "dirs.guest",
        ),
        (
            PluginTest::new(b.join("p.wasm")).grant_net("http://127.0.0.1:3000/mcp"),
            r#"net = ["http://127.0.0.1:3000/mcp"]"#,
            "net",
        ),
        (
            PluginTest::new(b.join("p.wasm"))
                .grant_net("http://example.com")
                .grant_net("HTTP://Example.com:80/"),
            r#"net = ["http://example.com", "HTTP://Example.com:80/"]"#,
            "net",
        ),
    ];
    for (test, table, key) in cases {
        let refused: GrantError = match test.start().await {
            Err(StartError::DirGrant { reason, .. } | StartError::NetGrant { reason, .. }) => {
                *reason
            }
            Err(e) => panic!("{table}: refused for another reason: {e}"),
            Ok(_) => panic!("{table}: the harness accepted it"),
        };
        let config = config(b, table).unwrap_err();
        let expected = format!("plugins.p.grants.{key}: {refused}");
        assert!(
            config.ends_with(&expected),
            "config: {config}\nharness: {expected}"
        );
    }
}
