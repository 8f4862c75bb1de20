//! Interoperability with the Bytecode Alliance's `wkg` (wasm-pkg-tools),
//! both ways, against a real registry on loopback: a component `wkg oci
//! push` pushed is added by `plugin add` and runs; a component `plugin publish` pushed is pulled by
//! `wkg oci pull` and `wkg get` byte for byte, its manifest and config
//! accepted, and its config is, field for field, the one `wkg` writes for
//! the same file.
//!
//! `wkg` is pinned ([`WKG_VERSION`], installed by `.ci/install-wkg.sh`,
//! which these tests run on first use when it is missing); they never
//! skip. It runs with an empty
//! environment but a home, config, cache and Docker config of its own in
//! a temporary directory, so nothing on the machine is read or written.
//! The registry serves plain HTTP: `wkg oci` is told so with
//! `--insecure HOST:PORT`, `wkg get` with a config file
//! (`[registry."HOST:PORT".oci] protocol = "http"`).

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use tiny_harness_oci::test_registry::Registry;

use crate::oci::{grant_work, ok, project, run, sha256_hex};
use crate::{LIVENESS, fs_wasm, stderr, stdout, wait_live_for};

/// The `wkg` these tests were written against; `.ci/install-wkg.sh`
/// installs it (keep the two equal).
const WKG_VERSION: &str = "0.16.1";

/// The `wkg` of [`WKG_VERSION`]: cargo's bin directory first (where the
/// script installs it), then `PATH`; installed by the script when neither
/// has it.
fn wkg_binary() -> &'static Path {
    static WKG: OnceLock<PathBuf> = OnceLock::new();
    WKG.get_or_init(|| {
        // First use: install it as CI does (minutes, once), under a lock in
        // cargo's bin directory, where it goes.
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))
            .expect("CARGO_HOME or HOME is set");
        let script = crate::workspace_root().join(".ci/install-wkg.sh");
        tiny_harness_prereq::once(
            &cargo_home.join("bin"),
            "wkg",
            || find_wkg().is_ok(),
            || {
                let status = Command::new("bash").arg(&script).status();
                assert!(
                    status.as_ref().is_ok_and(|s| s.success()),
                    "{} failed: {status:?}",
                    script.display()
                );
            },
        );
        find_wkg().unwrap_or_else(|why| panic!("{why}"))
    })
}

/// The `wkg` of [`WKG_VERSION`], or what was found instead.
fn find_wkg() -> Result<PathBuf, String> {
    {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")));
        let path = std::env::var_os("PATH").unwrap_or_default();
        let candidates = cargo_home
            .map(|home| home.join("bin"))
            .into_iter()
            .chain(std::env::split_paths(&path))
            .map(|dir| dir.join("wkg"));
        let mut seen = Vec::new();
        for candidate in candidates.filter(|c| c.is_file()) {
            let version = Command::new(&candidate)
                .arg("--version")
                .env_clear()
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .unwrap_or_else(|e| e.to_string());
            if version == format!("wkg {WKG_VERSION}") {
                return Ok(candidate);
            }
            seen.push(format!("{} reports {version:?}", candidate.display()));
        }
        Err(format!(
            "wkg {WKG_VERSION} is missing ({}): run .ci/install-wkg.sh",
            if seen.is_empty() {
                "no wkg in cargo's bin directory or on PATH".to_owned()
            } else {
                seen.join("; ")
            }
        ))
    }
}

/// Runs `wkg` in `home` with `args` and nothing of this machine's: an
/// empty environment but its home, XDG directories, cache and Docker
/// config (none: no credentials), all under `home`.
fn wkg(home: &Path, args: &[&str]) -> Output {
    let child = Command::new(wkg_binary())
        .args(args)
        .current_dir(home)
        .env_clear()
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("DOCKER_CONFIG", home.join(".docker"))
        .env("WKG_CACHE_DIR", home.join(".cache/wasm-pkg"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_live_for(child, LIVENESS, &format!("wkg {args:?}"))
}

/// What `wkg` printed on stdout, after asserting that it succeeded.
fn wkg_ok(home: &Path, args: &[&str]) -> String {
    let output = wkg(home, args);
    assert_eq!(
        output.status.code(),
        Some(0),
        "wkg {args:?}:\n{}{}",
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

/// A wkg config file in `home` that maps the package namespace `example`
/// to `registry` and reaches it over plain HTTP. Returns its path.
fn wkg_config(home: &Path, registry: &Registry) -> String {
    let file = home.join("wkg.toml");
    std::fs::write(
        &file,
        format!(
            "[namespace_registries]\nexample = \"{host}\"\n\n[registry.\"{host}\".oci]\nprotocol = \"http\"\n",
            host = registry.host()
        ),
    )
    .unwrap();
    file.to_str().unwrap().to_owned()
}

/// `GET path` on the registry (the manifest's media type accepted): the
/// body, after asserting a 200.
fn registry_get(registry: &Registry, path: &str) -> Vec<u8> {
    let mut stream = TcpStream::connect(("127.0.0.1", registry.port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {}\r\nAccept: application/vnd.oci.image.manifest.v1+json\r\n\r\n",
        registry.host()
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP response");
    let head = String::from_utf8_lossy(&response[..end]).into_owned();
    assert_eq!(head.split(' ').nth(1), Some("200"), "GET {path}: {head}");
    response[end + 4..].to_vec()
}

/// The manifest at `repository:tag` and its config, as JSON.
fn manifest_and_config(
    registry: &Registry,
    repository: &str,
    tag: &str,
) -> (serde_json::Value, serde_json::Value) {
    let manifest: serde_json::Value = serde_json::from_slice(&registry_get(
        registry,
        &format!("/v2/{repository}/manifests/{tag}"),
    ))
    .unwrap();
    let digest = manifest["config"]["digest"].as_str().unwrap();
    let config = serde_json::from_slice(&registry_get(
        registry,
        &format!("/v2/{repository}/blobs/{digest}"),
    ))
    .unwrap();
    (manifest, config)
}

#[test]
fn a_component_wkg_pushed_is_added_by_plugin_add_and_runs() {
    let registry = Registry::start();
    let home = tempfile::tempdir().unwrap();
    let fs = std::fs::read(fs_wasm()).unwrap();
    let host = registry.host();
    let out = wkg_ok(
        home.path(),
        &[
            "oci",
            "push",
            "--insecure",
            &host,
            &format!("{host}/wkg/fs:1.0"),
            fs_wasm().to_str().unwrap(),
        ],
    );
    let manifest = out
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .unwrap_or_else(|| panic!("no digest in {out}"));
    assert!(manifest.starts_with("sha256:"), "{out}");

    let reference = registry.reference("wkg/fs:1.0");
    let dir = project();
    let out = ok(&run(dir.path(), &["plugin", "add", "fs", &reference], None));
    assert!(out.contains("added plugin fs"), "{out}");
    assert!(out.contains("tool workspace.read_file"), "{out}");
    // Pinned at the manifest wkg pushed, the component's digest that of
    // the file.
    let config = std::fs::read_to_string(dir.path().join("tiny-harness.toml")).unwrap();
    assert!(
        config.contains(&format!("path = \"{reference}@{manifest}\"")),
        "{config}"
    );
    assert!(
        config.contains(&format!("sha256 = \"{}\"", sha256_hex(&fs))),
        "{config}"
    );
    grant_work(dir.path());
    let call = ["call", "fs/workspace.read_file", r#"{"path":"a.txt"}"#];
    let out = ok(&run(dir.path(), &call, None));
    assert!(out.contains("from the store"), "{out}");
}

#[test]
fn a_component_plugin_publish_pushed_is_pulled_by_wkg_byte_for_byte() {
    let registry = Registry::start();
    let home = tempfile::tempdir().unwrap();
    let dir = project();
    let fs = std::fs::read(fs_wasm()).unwrap();
    let host = registry.host();
    ok(&run(
        dir.path(),
        &[
            "plugin",
            "publish",
            fs_wasm().to_str().unwrap(),
            &registry.reference("example/fs:1.0.0"),
        ],
        None,
    ));

    // `wkg oci pull`: exactly one layer, of application/wasm, and the
    // config's media type; the layer's digest checked.
    wkg_ok(
        home.path(),
        &[
            "oci",
            "pull",
            "--insecure",
            &host,
            &format!("{host}/example/fs:1.0.0"),
            "-o",
            "pulled.wasm",
        ],
    );
    assert!(
        std::fs::read(home.path().join("pulled.wasm")).unwrap() == fs,
        "wkg oci pull got other bytes than were published"
    );

    // `wkg get`: the manifest's media type, the config parsed as
    // oci-wasm's WasmConfig, the content checked against the layer's
    // digest; without a version, the tags listed and read as versions.
    let config = wkg_config(home.path(), &registry);
    for (spec, output) in [
        ("example:fs@1.0.0", "got.wasm"),
        ("example:fs", "latest.wasm"),
    ] {
        // (An output without a directory, `-o got.wasm`, is refused by
        // wkg 0.16.1: `output directory "" does not exist`.)
        let output = home.path().join(output);
        wkg_ok(
            home.path(),
            &[
                "get",
                "--config",
                &config,
                spec,
                "-o",
                output.to_str().unwrap(),
            ],
        );
        assert!(
            std::fs::read(&output).unwrap() == fs,
            "wkg get {spec} got other bytes than were published"
        );
    }

    // The artifact, field for field, is what wkg writes for the same file
    // (but for when it was made, and the annotations).
    wkg_ok(
        home.path(),
        &[
            "oci",
            "push",
            "--insecure",
            &host,
            &format!("{host}/wkg/fs:1.0"),
            fs_wasm().to_str().unwrap(),
        ],
    );
    let (our_manifest, ours) = manifest_and_config(&registry, "example/fs", "1.0.0");
    let (their_manifest, theirs) = manifest_and_config(&registry, "wkg/fs", "1.0");
    for pointer in [
        "/schemaVersion",
        "/mediaType",
        "/config/mediaType",
        "/layers/0/mediaType",
        "/layers/0/digest",
        "/layers/0/size",
    ] {
        assert_eq!(
            our_manifest.pointer(pointer),
            their_manifest.pointer(pointer),
            "{pointer}: ours {our_manifest}, wkg's {their_manifest}"
        );
    }
    assert_eq!(our_manifest["layers"].as_array().map(Vec::len), Some(1));
    let mut fields: Vec<&String> = theirs.as_object().unwrap().keys().collect();
    fields.sort();
    let mut our_fields: Vec<&String> = ours.as_object().unwrap().keys().collect();
    our_fields.sort();
    assert_eq!(our_fields, fields, "ours {ours}, wkg's {theirs}");
    for field in fields.into_iter().filter(|f| *f != "created") {
        assert_eq!(
            ours[field], theirs[field],
            "{field}: ours {ours}, wkg's {theirs}"
        );
    }
    assert_eq!(
        ours["layerDigests"][0],
        format!("sha256:{}", sha256_hex(&fs)).as_str()
    );
}
