//! Unit tests of the config parser.

use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(Path::new("/tmp/tiny-harness.toml"), text)
}

#[test]
fn an_empty_config_has_no_plugins() {
    assert!(parse("").unwrap().plugins.is_empty());
}

#[test]
fn defaults_grant_nothing() {
    let config = parse("[plugins.fs]\npath = \"fs.wasm\"\n").unwrap();
    let fs = &config.plugins[0];
    assert_eq!(fs.name, "fs");
    assert_eq!(fs.wasm, Path::new("/tmp/fs.wasm"));
    assert_eq!(fs.grants, Grants::default());
    assert_eq!(fs.limits, Limits::default());
    assert_eq!(fs.config, serde_json::json!({}));
}

#[test]
fn everything_is_read() {
    let config = parse(
        r#"
[plugins.fs]
path = "fs.wasm"
sha256 = "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
limits = { memory_mib = 16, timeout_ms = 500, result_kib = 8 }
[plugins.fs.grants]
env = ["HOME"]
dirs = [{ host = "/tmp", guest = "/w", mode = "read-write" }]
[plugins.fs.config]
root = "/w"
depth = 3
"#,
    )
    .unwrap();
    let fs = &config.plugins[0];
    assert_eq!(
        fs.sha256.as_deref(),
        Some("abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789")
    );
    assert_eq!(fs.limits.memory_bytes, 16 << 20);
    assert_eq!(fs.limits.result_bytes, 8 << 10);
    assert_eq!(fs.limits.timeout, Duration::from_millis(500));
    assert_eq!(fs.grants.env, ["HOME"]);
    assert_eq!(fs.grants.dirs[0].mode, DirMode::ReadWrite);
    assert_eq!(fs.grants.dirs[0].guest, "/w");
    assert_eq!(fs.config, serde_json::json!({"root": "/w", "depth": 3}));
}

#[test]
fn errors_name_file_line_and_key() {
    let err =
        parse("[plugins.fs]\npath = \"fs.wasm\"\n[plugins.fs.grants]\ndirz = []\n").unwrap_err();
    assert_eq!(err.location.map(|l| l.0), Some(4), "{err}");
    let text = err.to_string();
    assert!(text.starts_with("/tmp/tiny-harness.toml:4:"), "{text}");
    assert!(text.contains("dirz"), "{text}");
    assert!(!text.contains('\n'), "{text}");

    let err = parse("[plugins.fs]\npath = \"fs.wasm\"\nlimits = { memory_mib = 0 }\n").unwrap_err();
    assert_eq!(err.location.map(|l| l.0), Some(3));
    assert!(
        err.to_string().contains("plugins.fs.limits.memory_mib"),
        "{err}"
    );
    let err =
        parse("[plugins.fs]\npath = \"fs.wasm\"\nlimits = { result_kib = 70000 }\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("plugins.fs.limits.result_kib: must be between 1 and 65536"),
        "{err}"
    );

    let err =
        parse("[plugins.fs]\npath = \"fs.wasm\"\n[plugins.fs.limits]\nmemory_mib = \"lots\"\n")
            .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/tmp/tiny-harness.toml:4:14: plugins.fs.limits.memory_mib: "),
        "{err}"
    );

    let err = parse("[plugins.fs]\npath = \"x.wasm\"\n[plugins.fs.grants]\ndirs = [{ host = \".\", guest = \"/w\", mode = \"rw\" }]\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("plugins.fs.grants.dirs.mode: unknown variant `rw`"),
        "{err}"
    );

    let err = parse("[plugins.fs]\npath = \"x.wasm\"\nbogus = 1\n").unwrap_err();
    assert!(
        err.to_string()
            .contains(":3:1: plugins.fs.bogus: unknown field `bogus`"),
        "{err}"
    );

    let err = parse("[plugins.Bad]\npath = \"x.wasm\"\n").unwrap_err();
    assert_eq!(err.location.map(|l| l.0), Some(1));
    assert!(err.to_string().contains("invalid plugin name"), "{err}");

    let err = parse("[plugins.fs]\npath = \"x.wasm\"\nsha256 = \"abc\"\n").unwrap_err();
    assert!(
        err.to_string().contains(":3:") && err.to_string().contains("sha256"),
        "{err}"
    );

    let err = parse("[plugins.fs]\npath = \"x.wasm\"\n[plugins.fs.grants]\ndirs = [{ host = \"/tmp\", guest = \"rel\" }]\n").unwrap_err();
    assert!(
        err.to_string().contains("must be an absolute guest path"),
        "{err}"
    );

    let err = parse("[plugins.fs]\npath = \"x.wasm\"\n[plugins.fs.grants]\ndirs = [{ host = \"/no/such/dir\", guest = \"/w\" }]\n").unwrap_err();
    assert!(err.to_string().contains("is not a directory"), "{err}");
}

#[test]
fn every_limit_key_is_read_and_checked() {
    let config = parse(
        "[plugins.p]\npath = \"p.wasm\"\n[plugins.p.limits]\n\
         result_parts = 7\nopen_files = 9\narguments_kib = 3\ntools = 11\nservers = 2\n\
         description_kib = 5\ntitle_kib = 2\nschema_kib = 4\nschema_cost = 99\n\
         registration_kib = 6\n",
    )
    .unwrap();
    let l = &config.plugins[0].limits;
    assert_eq!(
        (l.result_parts, l.open_files, l.arguments_bytes),
        (7, 9, 3 << 10)
    );
    let r = &l.registration;
    assert_eq!((r.tools, r.servers, r.schema_cost), (11, 2, 99));
    assert_eq!(
        (
            r.description_bytes,
            r.title_bytes,
            r.schema_bytes,
            r.total_bytes
        ),
        (5 << 10, 2 << 10, 4 << 10, 6 << 10)
    );
    for (key, over) in [("open_files", 16_385), ("tools", 65_537), ("title_kib", 65)] {
        let err = parse(&format!(
            "[plugins.p]\npath = \"p.wasm\"\n[plugins.p.limits]\n{key} = {over}\n"
        ))
        .unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("plugins.p.limits.{key}: must be between 1 and")),
            "{err}"
        );
    }
}
