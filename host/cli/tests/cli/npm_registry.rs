//! `mcp install` against npm registries of ours on loopback: every
//! package must come from the registry, or from a scoped registry the
//! user's npm config names; a packument that sends a dependency's tarball
//! to another host refuses the install, and the lock records where each
//! package came from.

use std::path::Path;
use std::process::{Command, Output};

use super::files::serve;
use super::install::{left_in_store, lock, text};

/// Packuments and tarballs: on `main` (the registry), `hsgood` and
/// `hsok`, `hsmain` whose dependency `hsother`'s tarball is on `other`,
/// and `hsscoped` depending on `@hs/dep`, which `other` serves as a
/// scoped registry.
fn registries(main: &Path, main_port: u16, other: &Path, other_port: u16) {
    let made = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(
            r##"
import base64, hashlib, io, json, os, sys, tarfile
main, main_port, other, other_port = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

def publish(root, port, name, deps, tarball_root, tarball_port):
    files = {
        "package/package.json": json.dumps({
            "name": name, "version": "1.0.0", "bin": {name.split("/")[-1]: "index.js"},
            "dependencies": deps,
        }),
        "package/index.js": "#!/usr/bin/env node\nconsole.log('" + name + "');\n",
    }
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for path, text in files.items():
            raw = text.encode()
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(raw), 0o755, 0
            tar.addfile(info, io.BytesIO(raw))
    tgz = data.getvalue()
    flat = name.replace("/", "%2f")
    short = name.split("/")[-1]
    os.makedirs(f"{tarball_root}/{flat}/-", exist_ok=True)
    open(f"{tarball_root}/{flat}/-/{short}-1.0.0.tgz", "wb").write(tgz)
    os.makedirs(f"{root}/{flat}", exist_ok=True)
    version = json.loads(files["package/package.json"])
    version["dist"] = {
        "tarball": f"http://127.0.0.1:{tarball_port}/{flat}/-/{short}-1.0.0.tgz",
        "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode(),
        "shasum": hashlib.sha1(tgz).hexdigest(),
    }
    packument = {"name": name, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": version}}
    open(f"{root}/{flat}/index.json", "w").write(json.dumps(packument))

publish(main, main_port, "hsok", {}, main, main_port)
publish(main, main_port, "hsgood", {"hsok": "1.0.0"}, main, main_port)
publish(main, main_port, "hsother", {}, other, other_port)
publish(main, main_port, "hsmain", {"hsother": "1.0.0"}, main, main_port)
publish(other, other_port, "@hs/dep", {}, other, other_port)
publish(main, main_port, "hsscoped", {"@hs/dep": "1.0.0"}, main, main_port)
"##,
        )
        .args([main, Path::new(&main_port.to_string())])
        .args([other, Path::new(&other_port.to_string())])
        .status()
        .unwrap();
    assert!(made.success());
}

/// `tiny-harness ARGS` in `dir` (also its HOME: npm's cache and config),
/// with `registry` as npm's.
fn run(dir: &Path, registry: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tiny-harness"))
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
        .env("HOME", dir)
        .env("npm_config_registry", registry)
        .output()
        .unwrap()
}

/// A config in `dir` with the server `hs` as `npx -y PACKAGE` starts it,
/// its programs confined or not.
fn config(dir: &Path, registry: &str, package: &str, confined: bool) {
    let added = run(
        dir,
        registry,
        &["mcp", "add", "hs", "--", "npx", "-y", package],
    );
    assert_eq!(added.status.code(), Some(0), "{}", text(&added));
    if !confined {
        let path = dir.join("tiny-harness.toml");
        let written = std::fs::read_to_string(&path).unwrap();
        let unconfined = written.replacen(
            "path = \"builtin:mcp\"",
            "path = \"builtin:mcp\"\nconfinement = \"none\"",
            1,
        );
        assert_ne!(written, unconfined, "{written}");
        std::fs::write(&path, unconfined).unwrap();
    }
}

#[test]
fn every_package_comes_from_the_registry_or_a_scoped_one_and_the_lock_says_which() {
    let (main, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (main_port, main_seen) = serve(main.path().to_owned());
    let (other_port, other_seen) = serve(other.path().to_owned());
    registries(main.path(), main_port, other.path(), other_port);
    let registry = format!("http://127.0.0.1:{main_port}/");
    let other_origin = format!("http://127.0.0.1:{other_port}");

    // From the registry alone, confined: installed, the registry recorded.
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), &registry, "hsgood@1.0.0", true);
    let install = run(dir.path(), &registry, &["mcp", "install"]);
    assert_eq!(install.status.code(), Some(0), "{}", text(&install));
    let code = &lock(dir.path())["plugins"]["mcp"]["servers"]["hs"]["code"];
    assert_eq!(code["package"], "hsgood", "{code}");
    assert_eq!(
        code["registry"],
        format!("http://127.0.0.1:{main_port}"),
        "{code}"
    );
    assert!(code["dependencies"]["hsok@1.0.0"].is_string(), "{code}");
    assert!(code.get("sources").is_none(), "{code}");
    assert!(
        main_seen
            .lock()
            .unwrap()
            .iter()
            .any(|p| p.ends_with("hsok-1.0.0.tgz"))
    );

    // A dependency whose tarball the packument puts on another host: the
    // install is refused naming both, and nothing is installed or locked
    // (unconfined, so that npm could reach it at all).
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), &registry, "hsmain@1.0.0", false);
    let refused = run(dir.path(), &registry, &["mcp", "install"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let said = text(&refused);
    assert!(
        said.contains(&format!("hsother@1.0.0 was resolved from {other_origin} ("))
            && said.contains(&format!(
                "not from the registry http://127.0.0.1:{main_port}"
            ))
            && said.contains("@scope:registry="),
        "{said}"
    );
    assert!(
        other_seen
            .lock()
            .unwrap()
            .iter()
            .any(|p| p.ends_with("hsother-1.0.0.tgz")),
        "npm did fetch it from the other host"
    );
    let left = left_in_store(dir.path());
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(
        !dir.path().join("tiny-harness.lock").exists()
            || lock(dir.path())["plugins"]["mcp"]["servers"]["hs"]["code"].is_null()
    );

    // The same host named as a scoped registry in the user's npm config:
    // installed, and the lock records where the scoped package came from.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".npmrc"),
        format!("@hs:registry={other_origin}/\n"),
    )
    .unwrap();
    config(dir.path(), &registry, "hsscoped@1.0.0", false);
    let install = run(dir.path(), &registry, &["mcp", "install"]);
    assert_eq!(install.status.code(), Some(0), "{}", text(&install));
    let code = &lock(dir.path())["plugins"]["mcp"]["servers"]["hs"]["code"];
    assert_eq!(code["sources"]["@hs/dep@1.0.0"], other_origin, "{code}");
}

/// A registry in `root` serving `hsbig` (one 24 MiB file that does not
/// compress: a 24 MiB download) and `hsbomb` (a 1 MiB download that
/// unpacks to 40 files of 1 MiB, none of them large).
fn large_packages(root: &Path, port: u16) {
    let made = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(
            r##"
import base64, hashlib, io, json, os, sys, tarfile
root, port = sys.argv[1], sys.argv[2]

def publish(name, files):
    files["package/package.json"] = json.dumps({
        "name": name, "version": "1.0.0", "bin": {name: "index.js"},
    }).encode()
    files["package/index.js"] = b"console.log('hi')\n"
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz", compresslevel=1) as tar:
        for path, raw in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(raw), 0o644, 0
            tar.addfile(info, io.BytesIO(raw))
    tgz = data.getvalue()
    os.makedirs(f"{root}/{name}/-", exist_ok=True)
    open(f"{root}/{name}/-/{name}-1.0.0.tgz", "wb").write(tgz)
    packument = {"name": name, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
        "name": name, "version": "1.0.0", "bin": {name: "index.js"},
        "dist": {
            "tarball": f"http://127.0.0.1:{port}/{name}/-/{name}-1.0.0.tgz",
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode(),
            "shasum": hashlib.sha1(tgz).hexdigest(),
        },
    }}}
    open(f"{root}/{name}/index.json", "w").write(json.dumps(packument))

publish("hsbig", {"package/blob.bin": os.urandom(24 << 20)})
# Mostly zeros, with enough noise that no ratio check takes it for a bomb.
noisy = b"".join(os.urandom(16) + bytes(1008) for _ in range(1024))
publish("hsbomb", {f"package/part{i}.bin": noisy for i in range(40)})
"##,
        )
        .arg(root)
        .arg(port.to_string())
        .status()
        .unwrap();
    assert!(made.success());
}

#[test]
fn an_install_past_its_room_is_refused_naming_the_limit_and_leaves_nothing() {
    let served = tempfile::tempdir().unwrap();
    let (port, seen) = serve(served.path().to_owned());
    large_packages(served.path(), port);
    let registry = format!("http://127.0.0.1:{port}/");
    // One download past the room, confined (the kernel's limit on one
    // file ends it), and a small download that unpacks past it, not
    // confined (the measure of the install ends it).
    for (package, confined) in [("hsbig@1.0.0", true), ("hsbomb@1.0.0", false)] {
        let dir = tempfile::tempdir().unwrap();
        config(dir.path(), &registry, package, confined);
        let refused = run(
            dir.path(),
            &registry,
            &["mcp", "install", "--max-size", "16"],
        );
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
        let error = String::from_utf8_lossy(&refused.stderr).into_owned();
        assert_eq!(error.lines().count(), 1, "{error}");
        assert!(
            error.contains("mcp/hs")
                && error.contains("grew past the install's limit of 16 MiB")
                && error.contains("nothing was kept")
                && error.contains("mcp install --max-size MIB"),
            "{package}: {error}"
        );
        let left = left_in_store(dir.path());
        assert!(left.is_empty(), "{package}: left behind: {left:?}");
        assert!(!dir.path().join("tiny-harness.lock").exists());
        // The install's cache was its own: nothing in the user's.
        assert!(!dir.path().join(".npm/_cacache").exists(), "{package}");
    }
    let name = |p: &str| p.ends_with(".tgz");
    assert_eq!(
        seen.lock().unwrap().iter().filter(|p| name(p)).count(),
        2,
        "both tarballs were fetched"
    );

    // The same with room enough: installed, from a cache of its own that
    // is not left in the install.
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), &registry, "hsbomb@1.0.0", false);
    let installed = run(
        dir.path(),
        &registry,
        &["mcp", "install", "--max-size", "64"],
    );
    assert_eq!(installed.status.code(), Some(0), "{}", text(&installed));
    let install = dir.path().join("tiny-harness.store/mcp/hs");
    assert!(install.join("node_modules/hsbomb/part39.bin").is_file());
    assert!(!install.join(".install-work").exists());
    assert!(!dir.path().join(".npm/_cacache").exists());
}

#[test]
fn a_registry_that_drips_ends_at_the_install_limit_naming_it() {
    // Answers every request with a large body, one byte a second.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let registry = format!(
        "http://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let mut head = [0u8; 4096];
                let _ = stream.read(&mut head);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                      Content-Length: 100000\r\n\r\n",
                );
                for _ in 0..100 {
                    if stream.write_all(b" ").is_err() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), &registry, "hsgood@1.0.0", true);
    let began = std::time::Instant::now();
    let ended = run(dir.path(), &registry, &["mcp", "install", "--timeout", "4"]);
    assert_eq!(ended.status.code(), Some(1), "{}", text(&ended));
    assert!(began.elapsed() < std::time::Duration::from_secs(60));
    let error = String::from_utf8_lossy(&ended.stderr).into_owned();
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.contains("mcp/hs")
            && error.contains(&format!("is the registry {registry} answering?"))
            && error.contains("within the install's limit of 4 s"),
        "{error}"
    );
    let left = left_in_store(dir.path());
    assert!(left.is_empty(), "left behind: {left:?}");
}
