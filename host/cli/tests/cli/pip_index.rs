//! `mcp install` of a PyPI server from the index the user's pip or uv
//! settings name, as companies point both at a mirror: a PEP 503 index of
//! ours on loopback, on a port of its own, which the confined pip must be
//! allowed to reach; and a package with only a source distribution,
//! which is refused saying why.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::files::serve;
use super::install::{left_in_store, lock, text};

/// A PEP 503 index in `root`: `hsdemo` 1.0 as a wheel with a console
/// script `hsdemo`, `hslegacy` 1.0 as a wheel whose program is a plain
/// script (setup.py's `scripts`), and `hssdist` 1.0 as a source
/// distribution only. Both programs say who they are on standard error
/// and exit 3.
fn index(root: &Path) {
    let made = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(
            r##"
import base64, hashlib, os, sys, zipfile
root = sys.argv[1]
os.makedirs(f"{root}/files")
def wheel(name, files):
    record = ""
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(text.encode())}\n"
    files[f"{name}-1.0.dist-info/RECORD"] = record + f"{name}-1.0.dist-info/RECORD,,\n"
    path = f"{root}/files/{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for inner, text in files.items():
            z.writestr(zipfile.ZipInfo(inner, (2020, 1, 1, 0, 0, 0)), text)
    return hashlib.sha256(open(path, "rb").read()).hexdigest()

legacy = wheel("hslegacy", {
    "hslegacy/__init__.py": "",
    "hslegacy-1.0.data/scripts/hslegacy": "#!python\nimport sys\nsys.stderr.write('hslegacy ran\\n')\nsys.exit(3)\n",
    "hslegacy-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: hslegacy\nVersion: 1.0\n",
    "hslegacy-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
})
sha = wheel("hsdemo", {
    "hsdemo/__init__.py": "import sys\ndef main():\n    sys.stderr.write('hsdemo ran\\n')\n    return 3\n",
    "hsdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: hsdemo\nVersion: 1.0\n",
    "hsdemo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    "hsdemo-1.0.dist-info/entry_points.txt": "[console_scripts]\nhsdemo = hsdemo:main\n",
})
for project, link in [
    ("hsdemo", f"../../files/hsdemo-1.0-py3-none-any.whl#sha256={sha}"),
    ("hslegacy", f"../../files/hslegacy-1.0-py3-none-any.whl#sha256={legacy}"),
    ("hssdist", "../../files/hssdist-1.0.tar.gz"),
]:
    os.makedirs(f"{root}/simple/{project}")
    with open(f"{root}/simple/{project}/index.html", "w") as page:
        name = link.split("/")[-1].split("#")[0]
        page.write(f'<!DOCTYPE html><html><body><a href="{link}">{name}</a></body></html>\n')
open(f"{root}/files/hssdist-1.0.tar.gz", "wb").write(b"not really a tarball")
"##,
        )
        .arg(root)
        .status()
        .unwrap();
    assert!(made.success());
}

/// `tiny-harness ARGS` in `dir`, with `env` and none of the user's own
/// pip or uv index settings.
fn run(dir: &Path, env: &[(&str, String)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tiny-harness"));
    command
        .args(args)
        .current_dir(dir)
        .env("TINY_HARNESS_CACHE_DIR", super::shared_cache())
        .env("HOME", dir)
        // python3 (pip installs the server) and nothing of the machine's
        // own Python setup (a pyenv shim would look in HOME).
        .env("PATH", python_bin(dir));
    for name in [
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_FIND_LINKS",
        "PIP_CONFIG_FILE",
        "UV_DEFAULT_INDEX",
        "UV_INDEX_URL",
        "UV_INDEX",
        "UV_EXTRA_INDEX_URL",
        "XDG_CONFIG_HOME",
    ] {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

/// `dir/bin`, holding `python3` (Debian's).
fn python_bin(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    if !bin.exists() {
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink("/usr/bin/python3", bin.join("python3")).unwrap();
    }
    bin
}

/// A config in `dir` with the server `hs` as `uvx PACKAGE` starts it.
fn config(dir: &Path, package: &str) {
    let added = run(dir, &[], &["mcp", "add", "hs", "--", "uvx", package]);
    assert_eq!(added.status.code(), Some(0), "{}", text(&added));
}

#[test]
fn the_index_pip_or_uv_names_is_used_on_its_own_port_confined() {
    let served = tempfile::tempdir().unwrap();
    index(served.path());
    let (port, seen) = serve(served.path().to_owned());
    let url = format!("http://127.0.0.1:{port}/simple/");
    for setting in ["PIP_INDEX_URL", "UV_DEFAULT_INDEX", "pip.conf"] {
        let dir = tempfile::tempdir().unwrap();
        config(dir.path(), "hsdemo==1.0");
        let env: Vec<(&str, String)> = if setting == "pip.conf" {
            std::fs::create_dir_all(dir.path().join(".config/pip")).unwrap();
            std::fs::write(
                dir.path().join(".config/pip/pip.conf"),
                format!("[global]\nindex-url = {url}\n"),
            )
            .unwrap();
            Vec::new()
        } else {
            vec![(setting, url.clone())]
        };
        seen.lock().unwrap().clear();
        let install = run(dir.path(), &env, &["mcp", "install"]);
        assert_eq!(
            install.status.code(),
            Some(0),
            "{setting}: {}",
            text(&install)
        );
        let asked = seen.lock().unwrap().clone();
        assert!(
            asked.iter().any(|p| p == "/simple/hsdemo/")
                && asked.iter().any(|p| p.ends_with(".whl")),
            "{setting}: the index was not asked: {asked:?}"
        );
        let code = &lock(dir.path())["plugins"]["mcp"]["servers"]["hs"]["code"];
        assert_eq!(code["package"], "hsdemo", "{setting}: {code}");
        assert!(
            code["integrity"]
                .as_str()
                .is_some_and(|i| i.starts_with("sha256:")),
            "{setting}: {code}"
        );
        assert!(
            dir.path()
                .join("tiny-harness.store/mcp/hs/venv/bin/hsdemo")
                .is_file(),
            "{setting}"
        );
    }
}

#[test]
fn a_package_with_only_a_source_distribution_is_refused_saying_why() {
    let served = tempfile::tempdir().unwrap();
    index(served.path());
    let (port, seen) = serve(served.path().to_owned());
    let url = format!("http://127.0.0.1:{port}/simple/");
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), "hssdist");
    let install = run(dir.path(), &[("PIP_INDEX_URL", url)], &["mcp", "install"]);
    assert_eq!(install.status.code(), Some(1), "{}", text(&install));
    let said = text(&install);
    assert!(
        said.contains(&format!(
            "pip install hssdist failed: http://127.0.0.1:{port}/simple/ has only source \
             distributions of hssdist, and only wheels are installed"
        )) && said.contains("virtualenv"),
        "{said}"
    );
    assert!(!said.contains("No matching distribution"), "{said}");
    // The source distribution was never fetched, nothing was installed.
    let asked = seen.lock().unwrap().clone();
    assert!(!asked.iter().any(|p| p.ends_with(".tar.gz")), "{asked:?}");
    let left = left_in_store(dir.path());
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_console_script_runs_its_pinned_entry_point_and_a_plain_script_still_runs() {
    let served = tempfile::tempdir().unwrap();
    index(served.path());
    let (port, _) = serve(served.path().to_owned());
    let url = format!("http://127.0.0.1:{port}/simple/");
    for (package, said) in [
        ("hsdemo==1.0", "hsdemo ran"),
        ("hslegacy==1.0", "hslegacy ran"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        config(dir.path(), package);
        let env = [("PIP_INDEX_URL", url.clone())];
        let install = run(dir.path(), &env, &["mcp", "install"]);
        assert_eq!(
            install.status.code(),
            Some(0),
            "{package}: {}",
            text(&install)
        );
        // Not MCP servers: each says who it is on standard error and
        // exits, which the failed start quotes.
        let call = run(dir.path(), &env, &["call", "mcp/hs.anything", "{}"]);
        assert!(text(&call).contains(said), "{package}: {}", text(&call));
    }
}
