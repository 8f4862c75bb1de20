//! `plugin publish` and `plugin add` against a real registry on loopback
//! (Debian's docker-registry): a component published, added to a config,
//! run from the store with the registry gone, fetched again by its digest
//! (never its tag) when the store lacks it, moved with `--upgrade`; and
//! what a bad reference or a registry without the component get: one
//! line, and nothing written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use tiny_harness_oci::test_registry::Registry;

use crate::{fs_wasm, shared_cache, stderr, stdout, wait_live};

fn plugin_wasm(name: &str) -> PathBuf {
    fs_wasm().with_file_name(format!("{name}.wasm"))
}

/// Runs the binary in `dir`, with a Docker config of its own (none: no
/// credentials) so that the machine's never counts.
pub(crate) fn run(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = start(dir, args);
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        std::io::Write::write_all(&mut input, text.as_bytes()).unwrap();
    }
    drop(input);
    wait_live(child)
}

/// [`run`] started and not waited for (its standard input a pipe).
pub(crate) fn start(dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", shared_cache())
        .env("DOCKER_CONFIG", dir.join(".docker"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub(crate) fn ok(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        stdout(output),
        stderr(output)
    );
    stdout(output)
}

/// One line on stderr holding every needle, and a failure exit.
fn refused(output: &Output, needles: &[&str]) -> String {
    let err = stderr(output);
    assert_ne!(output.status.code(), Some(0), "{}", stdout(output));
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    err
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Everything under `dir` but the Docker config, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// A project directory with a config holding a comment and a `work/`.
pub(crate) fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("work")).unwrap();
    std::fs::write(dir.path().join("work/a.txt"), "from the store\n").unwrap();
    std::fs::write(dir.path().join("tiny-harness.toml"), "# my tools\n").unwrap();
    dir
}

pub(crate) fn grant_work(dir: &Path) {
    let config = dir.join("tiny-harness.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[plugins.fs.grants]\ndirs = [{ host = \"work\", guest = \"/workspace\" }]\n");
    std::fs::write(&config, text).unwrap();
}

#[test]
fn a_published_component_is_added_pinned_and_runs_from_the_store_offline() {
    let registry = Registry::start();
    let reference = registry.reference("plugins/fs:1.0");
    let fs = std::fs::read(fs_wasm()).unwrap();
    let dir = project();

    let out = ok(&run(
        dir.path(),
        &["plugin", "publish", fs_wasm().to_str().unwrap(), &reference],
        None,
    ));
    assert!(
        out.contains(&format!("component sha256:{}", sha256_hex(&fs))),
        "{out}"
    );
    assert!(out.contains("5 tools"), "{out}");
    let manifest = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("manifest "))
        .unwrap()
        .to_owned();

    let out = ok(&run(dir.path(), &["plugin", "add", "fs", &reference], None));
    assert!(out.contains("added plugin fs"), "{out}");
    assert!(out.contains("tool workspace.read_file"), "{out}");
    let config = std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap();
    assert!(config.starts_with("# my tools\n"), "{config}");
    assert!(
        config.contains(&format!("path = \"{reference}@{manifest}\"")),
        "{config}"
    );
    assert!(
        config.contains(&format!("sha256 = \"{}\"", sha256_hex(&fs))),
        "{config}"
    );
    assert!(
        config.contains("# dirs = [{"),
        "suggested, not granted: {config}"
    );
    let stored = dir.path().join(format!(
        "tiny-harness.store/oci.components/sha256/{}.wasm",
        sha256_hex(&fs)
    ));
    assert_eq!(std::fs::read(&stored).unwrap(), fs);

    grant_work(dir.path());
    let call = ["call", "fs/workspace.read_file", r#"{"path":"a.txt"}"#];
    assert!(ok(&run(dir.path(), &call, None)).contains("from the store"));
    let lock = std::fs::read_to_string(dir.path().join("tiny-harness.lock")).unwrap();
    assert!(
        lock.contains(&format!("\"source\": \"{reference}@{manifest}\"")),
        "{lock}"
    );

    let listed = ok(&run(dir.path(), &["plugins"], None));
    assert!(
        listed.contains(&format!("\n  from {reference}@{manifest}")),
        "{listed}"
    );
    let listed = ok(&run(dir.path(), &["plugins", "--json"], None));
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed[0]["source"], format!("{reference}@{manifest}"));

    // With the registry gone, a start needs nothing from it, --locked too.
    drop(registry);
    assert!(ok(&run(dir.path(), &call, None)).contains("from the store"));
    let mut locked = vec!["--locked"];
    locked.extend(call);
    assert!(ok(&run(dir.path(), &locked, None)).contains("from the store"));

    // A file in the store whose bytes are not the pinned ones never runs.
    std::fs::write(&stored, std::fs::read(plugin_wasm("hello")).unwrap()).unwrap();
    refused(
        &run(dir.path(), &call, None),
        &["plugin fs", &sha256_hex(&fs), "delete that file"],
    );

    // A store that lost the component: fetched again, which fails now,
    // on one line naming the plugin and the store; nothing written.
    std::fs::remove_file(&stored).unwrap();
    let before = files(dir.path());
    let lock_before = std::fs::read(dir.path().join("tiny-harness.lock")).unwrap();
    refused(
        &run(dir.path(), &call, None),
        &[
            "plugin fs",
            "oci.components",
            "fetching it by its digest failed",
        ],
    );
    assert_eq!(files(dir.path()), before);
    assert_eq!(
        std::fs::read(dir.path().join("tiny-harness.lock")).unwrap(),
        lock_before
    );
}

#[test]
fn a_moved_tag_changes_nothing_until_upgrade_and_a_lost_component_comes_back_by_digest() {
    let registry = Registry::start();
    let reference = registry.reference("plugins/tool:stable");
    let dir = project();
    let publish = |wasm: &Path| {
        ok(&run(
            dir.path(),
            &["plugin", "publish", wasm.to_str().unwrap(), &reference],
            None,
        ))
    };
    publish(&fs_wasm());
    ok(&run(dir.path(), &["plugin", "add", "fs", &reference], None));
    grant_work(dir.path());
    let tools = || ok(&run(dir.path(), &["tools"], None));
    assert!(tools().contains("fs/workspace.read_file"));

    // The tag moves to another component: what runs does not.
    publish(&plugin_wasm("textstats_rust"));
    assert!(!tools().contains("textstats"));
    // Nor does a component fetched again: by its digest, not the tag.
    std::fs::remove_dir_all(dir.path().join("tiny-harness.store")).unwrap();
    let listed = tools();
    assert!(listed.contains("fs/workspace.read_file") && !listed.contains("textstats"));

    // pins diff asks the registry: the tag moved, from what to what.
    let fs = std::fs::read(fs_wasm()).unwrap();
    let textstats = std::fs::read(plugin_wasm("textstats_rust")).unwrap();
    let diff = run(dir.path(), &["pins", "diff"], None);
    assert_eq!(diff.status.code(), Some(1), "{}", stderr(&diff));
    let text = stdout(&diff);
    assert!(text.contains("fs (component):"), "{text}");
    assert!(
        text.contains(&format!(
            "{reference} moved: it names component sha256:{} now, pinned sha256:{}",
            sha256_hex(&textstats),
            sha256_hex(&fs)
        )),
        "{text}"
    );
    assert!(text.contains("plugin add --upgrade fs"), "{text}");

    // --upgrade follows the tag and says what moved.
    let config_before = std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap();
    let out = ok(&run(
        dir.path(),
        &["plugin", "add", "--upgrade", "fs"],
        None,
    ));
    assert!(out.contains("moved plugin fs"), "{out}");
    assert!(
        out.contains(&format!(
            "component sha256:{} -> sha256:{}",
            sha256_hex(&fs),
            sha256_hex(&textstats)
        )),
        "{out}"
    );
    assert!(out.contains("tool added: textstats.stats"), "{out}");
    assert!(out.contains("tool removed: workspace.read_file"), "{out}");
    let config = std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap();
    assert!(config.contains(&sha256_hex(&textstats)), "{config}");
    // Only the path and the digest moved: the grants and the comment stayed.
    assert_eq!(
        config.lines().count(),
        config_before.lines().count(),
        "{config}"
    );
    assert!(config.contains("[plugins.fs.grants]") && config.starts_with("# my tools"));
    let out = ok(&run(
        dir.path(),
        &["plugin", "add", "--upgrade", "fs"],
        None,
    ));
    assert!(out.contains("nothing moved"), "{out}");
    let text = stdout(&run(dir.path(), &["pins", "diff"], None));
    assert!(!text.contains("(component)"), "{text}");
}

#[test]
fn bad_references_and_missing_components_write_nothing() {
    let registry = Registry::start();
    let dir = project();
    let before = files(dir.path());
    let config = std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap();
    let absent = registry.reference("plugins/absent:1");
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (vec!["https://ghcr.io/org/fs:1".into()], vec!["oci://"]),
        (vec!["oci://127.0.0.1/fs".into()], vec!["tag or a digest"]),
        (vec![absent.clone()], vec![absent.as_str()]),
        (
            vec!["oci://registry.invalid/fs:1".into()],
            vec!["registry.invalid"],
        ),
    ];
    for (args, needles) in cases {
        let mut all = vec!["plugin", "add", "fs"];
        all.extend(args.iter().map(String::as_str));
        refused(&run(dir.path(), &all, None), &needles);
        assert_eq!(files(dir.path()), before, "{args:?}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap(),
            config
        );
    }
    // A component of no world this host loads is neither published nor
    // added.
    let other = plugin_wasm("not_a_plugin");
    refused(
        &run(
            dir.path(),
            &["plugin", "publish", other.to_str().unwrap(), &absent],
            None,
        ),
        &["not published"],
    );
    // A password is never an argument.
    refused(
        &run(
            dir.path(),
            &[
                "plugin",
                "publish",
                fs_wasm().to_str().unwrap(),
                &absent,
                "--user",
                "me",
            ],
            None,
        ),
        &["--password-stdin"],
    );
    assert_eq!(files(dir.path()), before);
    // A name the config has is refused before any registry is asked (this
    // one could not answer).
    std::fs::write(
        dir.path().join("tiny-harness.toml"),
        "[plugins.fs]\npath = \"builtin:fs\"\n",
    )
    .unwrap();
    refused(
        &run(
            dir.path(),
            &["plugin", "add", "fs", "oci://127.0.0.1:1/fs:1"],
            None,
        ),
        &["plugin fs is in the config already", "--upgrade"],
    );
}

#[test]
fn credentials_come_from_standard_input_or_the_docker_config() {
    let registry = Registry::with_htpasswd("author", "s3cret");
    let reference = registry.reference("private/fs:1");
    let dir = project();
    let wasm = fs_wasm();
    let publish = |extra: &[&str], stdin: Option<&str>| {
        let mut args = vec![
            "plugin",
            "publish",
            wasm.to_str().unwrap(),
            reference.as_str(),
        ];
        args.extend(extra);
        run(dir.path(), &args, stdin)
    };
    refused(&publish(&[], None), &["401"]);
    refused(
        &publish(&["--user", "author", "--password-stdin"], Some("wrong\n")),
        &["401"],
    );
    ok(&publish(
        &["--user", "author", "--password-stdin"],
        Some("s3cret\n"),
    ));
    // The Docker config's `auths`, as `docker login` writes it.
    std::fs::create_dir(dir.path().join(".docker")).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode(b"author:s3cret");
    std::fs::write(
        dir.path().join(".docker/config.json"),
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{auth}"}}}}}}"#,
            registry.host()
        ),
    )
    .unwrap();
    ok(&run(dir.path(), &["plugin", "add", "fs", &reference], None));
}

#[test]
fn publishing_what_is_not_a_component_names_the_file_and_the_reference() {
    // A core module and bytes that are not WebAssembly, given by the
    // relative paths a user types: refused on one line that names that
    // path and the reference (never a temporary file), before any
    // registry is asked (none answers at this port).
    let dir = project();
    let before = files(dir.path());
    let reference = "oci://127.0.0.1:1/plugins/core:1";
    for (file, bytes) in [
        ("core.wasm", &b"\0asm\x01\0\0\0"[..]),
        ("random.wasm", &b"\x8f\x13 not WebAssembly at all"[..]),
    ] {
        let path = dir.path().join(file);
        std::fs::write(&path, bytes).unwrap();
        let err = refused(
            &run(dir.path(), &["plugin", "publish", file, reference], None),
            &[
                &format!("{file} was not published to {reference}"),
                "not a WebAssembly component",
            ],
        );
        assert!(!err.contains(".tmp"), "{err}");
        std::fs::remove_file(path).unwrap();
    }
    assert_eq!(files(dir.path()), before);
}

/// Pushes `layer` to `repository:tag` of the registry on `port` as a
/// Wasm artifact's layer, with curl, as a tool that does not check what
/// it pushes would.
fn push_raw(port: u16, repository: &str, tag: &str, layer: &[u8]) {
    let base = format!("http://127.0.0.1:{port}/v2/{repository}");
    let blob = |bytes: &[u8]| {
        let digest = format!("sha256:{}", sha256_hex(bytes));
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), bytes).unwrap();
        let started = Command::new("curl")
            .args(["-sS", "-D", "-", "-o", "/dev/null", "-X", "POST"])
            .arg(format!("{base}/blobs/uploads/"))
            .output()
            .unwrap();
        let headers = String::from_utf8_lossy(&started.stdout).into_owned();
        let location = headers
            .lines()
            .find_map(|l| {
                l.strip_prefix("Location: ")
                    .or(l.strip_prefix("location: "))
            })
            .unwrap_or_else(|| panic!("no Location: {headers}"))
            .trim()
            .to_owned();
        let sep = if location.contains('?') { '&' } else { '?' };
        let url = if location.starts_with("http") {
            location
        } else {
            format!("http://127.0.0.1:{port}{location}")
        };
        let put = Command::new("curl")
            .args([
                "-sSf",
                "-X",
                "PUT",
                "-H",
                "Content-Type: application/octet-stream",
            ])
            .arg("--data-binary")
            .arg(format!("@{}", file.path().display()))
            .arg(format!("{url}{sep}digest={digest}"))
            .status()
            .unwrap();
        assert!(put.success());
        (digest, bytes.len())
    };
    let config = br#"{"architecture":"wasm","os":"wasip2","layerDigests":[]}"#;
    let (config_digest, config_size) = blob(config);
    let (layer_digest, layer_size) = blob(layer);
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": "application/wasm", "digest": layer_digest, "size": layer_size}],
    });
    let put = Command::new("curl")
        .args(["-sSf", "-X", "PUT", "-H"])
        .arg("Content-Type: application/vnd.oci.image.manifest.v1+json")
        .arg("--data-binary")
        .arg(manifest.to_string())
        .arg(format!("{base}/manifests/{tag}"))
        .status()
        .unwrap();
    assert!(put.success());
}

#[test]
fn adding_what_is_not_a_component_names_the_reference_not_a_temporary_file() {
    // Bytes another tool pushed to a registry as a component's layer.
    let registry = Registry::start();
    push_raw(
        registry.port,
        "plugins/bytes",
        "1",
        b"\x8f\x13 not WebAssembly at all",
    );
    let reference = registry.reference("plugins/bytes:1");
    let dir = project();
    let before = files(dir.path());
    let err = refused(
        &run(dir.path(), &["plugin", "add", "bytes", &reference], None),
        &[
            &format!("{reference}: not added"),
            "not a WebAssembly component",
        ],
    );
    assert!(!err.contains(".tmp"), "{err}");
    assert_eq!(files(dir.path()), before);
}
