//! Unit tests of the config parser.

use super::*;
use crate::grant::NetGrant;
use std::time::Duration;

use crate::plugin::{DirMode, Grants, Limits};

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
    assert_eq!(fs.grants.env(), ["HOME"]);
    assert_eq!(fs.grants.dirs()[0].mode(), DirMode::ReadWrite);
    assert_eq!(fs.grants.dirs()[0].guest(), "/w");
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

    // A key that would make the line read backwards is shown escaped,
    // in the key path and in toml's own words.
    let err = parse("[plugins.fs]\npath = \"x.wasm\"\n\"b\u{202e}ogus\" = 1\n").unwrap_err();
    let shown = err.to_string();
    assert!(!shown.contains('\u{202e}'), "{shown:?}");
    assert!(shown.contains(r"unknown field `b\u{202e}ogus`"), "{shown}");

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

/// Where a shell would find `name` on this process's `PATH`: the first
/// absolute directory holding an executable regular file of that name.
fn on_path(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH").expect("PATH is set");
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|file| {
            std::fs::metadata(file)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| panic!("{name} is on PATH"))
}

#[test]
fn exec_and_net_grants_are_read() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("bin/tool");
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    std::fs::write(&tool, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = Config::parse(
        &dir.path().join("tiny-harness.toml"),
        r#"
[plugins.mcp]
path = "mcp.wasm"
[plugins.mcp.grants]
exec = ["sh", { program = "bin/tool" }]
net = ["http://127.0.0.1:*", "https://*.example.com"]
env = ["EVERYTHING_TOKEN"]
"#,
    )
    .unwrap();
    let grants = &config.plugins[0].grants;
    let programs: Vec<(&str, &Path)> = grants
        .exec()
        .iter()
        .map(|g| (g.written(), g.program()))
        .collect();
    assert_eq!(
        programs,
        [
            ("sh", on_path("sh").as_path()),
            ("bin/tool", tool.as_path())
        ]
    );
    let net: Vec<&str> = grants.net().iter().map(NetGrant::as_str).collect();
    assert_eq!(net, ["http://127.0.0.1:*", "https://*.example.com"]);
    let url = |u: &str| url::Url::parse(u).unwrap();
    assert!(grants.net()[0].allows(&url("http://127.0.0.1:3001/mcp")));
    assert!(grants.net()[1].allows(&url("https://api.example.com/")));
    assert_eq!(grants.env(), ["EVERYTHING_TOKEN"]);
}

#[test]
fn exec_errors_name_the_line_and_the_key() {
    let grants = |exec: &str| {
        parse(&format!(
            "[plugins.mcp]\npath = \"x.wasm\"\n[plugins.mcp.grants]\n{exec}\n"
        ))
        .unwrap_err()
        .to_string()
    };
    // A program that is not on this machine loads: its grant is unusable,
    // with the line that says where and why.
    let unusable = |exec: &str| {
        let config = parse(&format!(
            "[plugins.mcp]\npath = \"x.wasm\"\n[plugins.mcp.grants]\n{exec}\n"
        ))
        .expect("a missing program does not stop the config");
        let grants = &config.plugins[0].grants;
        assert!(grants.exec().is_empty());
        grants
            .unusable()
            .iter()
            .map(|u| u.reason().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        unusable("exec = [{ program = \"surely-no-such-program-here\" }]"),
        [
            "/tmp/tiny-harness.toml:4:21: plugins.mcp.grants.exec: program \"surely-no-such-program-here\" was not found on PATH: install it, or give its path"
        ]
    );
    let reasons = unusable("exec = [{ program = \"no/such/file\", read = [\"/no/such/dir\"] }]");
    assert!(
        reasons[0].starts_with("/tmp/tiny-harness.toml:4:21: plugins.mcp.grants.exec: program \"no/such/file\" (/tmp/no/such/file) does not exist"),
        "{reasons:?}"
    );
    // What is wrong on any machine still stops it.
    let err = grants("exec = [{ program = \"surely-no-such-program-here\", args = [\"(\"] }]");
    assert!(err.contains("plugins.mcp.grants.exec.args"), "{err}");
    let err = grants("exec = [{ program = \"\" }]");
    assert!(err.contains("names no program"), "{err}");
    let err = grants("exec = [{ program = \"sh\", argv = [\"-c\"] }]");
    assert!(err.contains(":4:"), "{err}");
    assert!(err.contains("unknown field `argv`"), "{err}");
    let err = grants("exec = [{ program = \"sh\", args = [\"-c\", \"(unclosed\"] }]");
    assert!(
        err.starts_with("/tmp/tiny-harness.toml:4:34: plugins.mcp.grants.exec.args: argument pattern \"(unclosed\" does not compile: "),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
    // Neither a number nor an array is a program; the message shows both
    // forms, and no type of the host's.
    let err = grants("exec = [3]");
    assert!(
        err.contains(":4:") && err.contains("plugins.mcp.grants.exec"),
        "{err}"
    );
    assert!(
        err.contains(
            r#"expected a program ("wc") or a table such as { program = "wc", args = ["-l"] }"#
        ),
        "{err}"
    );
    for wrong in [
        "exec = [[\"sh\"]]",
        "dirs = [\".\"]",
        "dirs = [{ host = \".\", guest = \"/w\", mode = 1 }]",
    ] {
        let err = grants(wrong);
        assert!(
            !err.contains("Raw") && err.contains("plugins.mcp.grants."),
            "{wrong}: {err}"
        );
    }

    // Patterns compile with a size limit: a pattern that would take
    // megabytes of automaton is refused at load.
    let err = grants("exec = [{ program = \"sh\", args = [\"\\\\w{1000}{1000}\"] }]");
    assert!(
        err.contains("plugins.mcp.grants.exec.args: argument pattern")
            && err.contains("does not compile"),
        "{err}"
    );

    // The same file twice, however it is named.
    let sh = on_path("sh");
    let err = grants(&format!(
        "exec = [{{ program = \"sh\" }}, {{ program = {:?} }}]",
        sh.display().to_string()
    ));
    assert!(
        err.contains(&format!(
            ":4:41: plugins.mcp.grants.exec: program {:?} is granted twice (as \"sh\")",
            sh.display().to_string()
        )),
        "{err}"
    );
}

#[test]
fn net_errors_name_the_line_and_the_key() {
    let grants = |net: &str| {
        parse(&format!(
            "[plugins.mcp]\npath = \"x.wasm\"\n[plugins.mcp.grants]\n{net}\n"
        ))
        .unwrap_err()
        .to_string()
    };
    let err = grants("net = [\"http://127.0.0.1:3000/mcp\"]");
    assert_eq!(
        err,
        "/tmp/tiny-harness.toml:4:8: plugins.mcp.grants.net: \"http://127.0.0.1:3000/mcp\" has a path (/mcp): a grant is scheme://host:port only and allows every path"
    );
    let err = grants("net = [\"ftp://example.com\"]");
    assert!(err.contains(":4:8: plugins.mcp.grants.net: "), "{err}");
    let err = grants("net = [\"http://example.com\", \"HTTP://Example.com:80/\"]");
    assert!(
        err.contains(":4:30: plugins.mcp.grants.net: \"HTTP://Example.com:80/\" is granted twice (as \"http://example.com\")"),
        "{err}"
    );
    let err = grants("net = [{ url = \"http://example.com\" }]");
    assert!(
        err.contains(":4:") && err.contains("plugins.mcp.grants.net"),
        "{err}"
    );
}

#[test]
fn the_config_names_the_skills_root() {
    use crate::config::Config;
    use std::path::{Path, PathBuf};
    let file = Path::new("/srv/task/tiny-harness.toml");
    let config = Config::parse(file, "[skills]\nroot = \"skills\"\n").unwrap();
    assert_eq!(config.skills_root, Some(PathBuf::from("/srv/task/skills")));
    assert_eq!(Config::parse(file, "").unwrap().skills_root, None);
    let empty = Config::parse(file, "[skills]\nroot = \" \"\n").unwrap_err();
    assert!(empty.to_string().contains("skills.root"), "{empty}");
    assert_eq!(empty.location, Some((2, 8)));
    assert!(Config::parse(file, "[skills]\nroots = \"x\"\n").is_err());
}

#[test]
#[cfg(feature = "intrinsics")]
fn the_config_sets_the_skill_caps_within_their_ceilings() {
    use crate::config::Config;
    use crate::intrinsic::SkillLimits;
    use std::path::Path;
    let file = Path::new("/srv/task/tiny-harness.toml");
    let defaults = Config::parse(file, "[skills]\nroot = \"s\"\n").unwrap();
    assert_eq!(defaults.skill_limits, SkillLimits::default());
    assert_eq!(defaults.skill_limits.skill_file, 256 * 1024);
    let set = Config::parse(
        file,
        "[skills]\nroot = \"s\"\nskill_kib = 512\nresource_kib = 2048\nresources = 1000\n",
    )
    .unwrap();
    assert_eq!(
        (
            set.skill_limits.skill_file,
            set.skill_limits.resource,
            set.skill_limits.resources
        ),
        (512 * 1024, 2048 * 1024, 1000)
    );
    for (line, says) in [
        (
            "skill_kib = 2048",
            "skills.skill_kib: must be between 1 and 1024",
        ),
        (
            "resource_kib = 0",
            "skills.resource_kib: must be between 1 and 16384",
        ),
        (
            "resources = 100000",
            "skills.resources: must be between 1 and 65536",
        ),
    ] {
        let refused =
            Config::parse(file, &format!("[skills]\nroot = \"s\"\n{line}\n")).unwrap_err();
        assert!(refused.to_string().contains(says), "{refused}");
        assert_eq!(refused.location.map(|l| l.0), Some(3), "{refused}");
    }
}

#[test]
fn an_oci_plugin_runs_from_the_store_by_its_sha256() {
    let hex = "ab".repeat(32);
    let reference = format!(
        "oci://127.0.0.1:5000/plugins/fs:1.0@sha256:{}",
        "cd".repeat(32)
    );
    let config = parse(&format!(
        "[plugins.fs]\npath = \"{reference}\"\nsha256 = \"{hex}\"\n"
    ))
    .unwrap();
    let fs = &config.plugins[0];
    assert_eq!(
        fs.wasm,
        Path::new(&format!(
            "/tmp/tiny-harness.store/oci.components/sha256/{hex}.wasm"
        ))
    );
    assert_eq!(fs.sha256.as_deref(), Some(hex.as_str()));
    assert_eq!(fs.source.as_deref(), Some(reference.as_str()));
    let origin = &config.oci["fs"];
    assert_eq!(origin.reference.to_string(), reference);
    assert_eq!(origin.sha256, hex);
    // A file's plugin has no source.
    let file = parse("[plugins.fs]\npath = \"fs.wasm\"\n").unwrap();
    assert!(file.oci.is_empty() && file.plugins[0].source.is_none());
}

#[test]
fn an_oci_plugin_without_its_digest_or_with_another_scheme_is_refused() {
    let err = parse("[plugins.fs]\npath = \"oci://127.0.0.1:5000/plugins/fs:1.0\"\n").unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains(":2:") && message.contains("plugins.fs.path"),
        "{message}"
    );
    assert!(
        message.contains("needs `sha256`")
            && message.contains("tiny-harness plugin add fs oci://127.0.0.1:5000/plugins/fs:1.0"),
        "{message}"
    );
    for path in [
        "https://ghcr.io/org/fs:1",
        "oci://127.0.0.1:5000/Fs:1",
        "oci:fs",
    ] {
        let err = parse(&format!(
            "[plugins.fs]\npath = \"{path}\"\nsha256 = \"{}\"\n",
            "ab".repeat(32)
        ))
        .unwrap_err();
        assert!(err.to_string().contains("plugins.fs.path"), "{path}: {err}");
        assert!(!err.to_string().contains('\n'), "{err}");
    }
}
