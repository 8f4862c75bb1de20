//! One plugin's grants, valid by construction: each grant checked as it
//! is made, the set as each is added, in the words the config shows.

use std::os::unix::fs::symlink;
use std::path::Path;

use super::super::*;

fn dir(host: &Path, guest: &str) -> Result<DirGrant, String> {
    DirGrant::new(host, guest, DirMode::ReadOnly).map_err(|e| e.to_string())
}

#[test]
fn a_guest_path_must_be_absolute_without_dot_segments() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["workspace", "", "/a/../b", "/..", "/a/./b", "./w"] {
        assert_eq!(
            dir(tmp.path(), bad).unwrap_err(),
            format!(
                "{bad:?} must be an absolute guest path without . or .. (for example \"/workspace\")"
            )
        );
    }
    for good in ["/", "/workspace", "/a/b", "/a..b", "/.hidden"] {
        let grant = dir(tmp.path(), good).unwrap();
        assert_eq!(grant.guest(), good);
    }
}

#[test]
fn a_host_path_must_be_a_directory_and_is_held_resolved() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("file");
    std::fs::write(&file, "").unwrap();
    for bad in [file.clone(), tmp.path().join("missing")] {
        assert_eq!(
            dir(&bad, "/w").unwrap_err(),
            format!("{} is not a directory", bad.display())
        );
    }
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    symlink(&real, &link).unwrap();
    let grant = DirGrant::new(link.join("../real"), "/w", DirMode::ReadWrite).unwrap();
    assert_eq!(grant.host(), real.canonicalize().unwrap());
    assert_eq!(grant.mode(), DirMode::ReadWrite);
}

#[test]
fn two_directories_at_one_guest_path_are_refused() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let mut grants = Grants::default();
    grants
        .add_dir(DirGrant::new(a.path(), "/w", DirMode::ReadOnly).unwrap())
        .unwrap()
        .add_dir(DirGrant::new(b.path(), "/w/inner", DirMode::ReadOnly).unwrap())
        .unwrap();
    let twin = DirGrant::new(b.path(), "/w", DirMode::ReadWrite).unwrap();
    assert_eq!(
        grants.add_dir(twin).unwrap_err().to_string(),
        "\"/w\" is granted twice"
    );
    assert_eq!(grants.dirs().len(), 2, "the refused grant is not added");
    assert_eq!(
        grants.remove_dir("/w").unwrap().host(),
        a.path().canonicalize().unwrap()
    );
    grants
        .add_dir(DirGrant::new(b.path(), "/w", DirMode::ReadWrite).unwrap())
        .unwrap();
}

#[test]
fn an_env_name_must_be_one() {
    let mut grants = Grants::default();
    for bad in ["", "A=B", "A\0"] {
        assert_eq!(
            grants.add_env(bad).unwrap_err().to_string(),
            format!("{bad:?} is not an environment variable name")
        );
    }
    grants.add_env("HOME").unwrap().add_env("HOME").unwrap();
    assert_eq!(grants.env(), ["HOME", "HOME"]);
}

#[test]
fn one_program_granted_twice_is_refused_by_its_file() {
    let sh = ExecGrant::resolve("/bin/sh", Path::new("/"), None).unwrap();
    let real = sh.canonical().display().to_string();
    let again = ExecGrant::resolve(&real, Path::new("/"), None).unwrap();
    let mut grants = Grants::default();
    grants.add_exec(sh).unwrap();
    assert_eq!(
        grants.add_exec(again).unwrap_err().to_string(),
        format!("program {real:?} is granted twice (as \"/bin/sh\"): grant it once")
    );
    assert!(grants.remove_exec("/bin/sh").is_some());
    assert!(grants.exec().is_empty());

    let missing = |w: &str| UnusableProgram::new(w, Path::new("/"), "not here".into());
    grants.add_unusable(missing("nope")).unwrap();
    assert_eq!(
        grants
            .add_unusable(missing("nope"))
            .unwrap_err()
            .to_string(),
        "program \"nope\" is granted twice: grant it once"
    );
}

#[test]
fn one_destination_granted_twice_is_refused_however_written() {
    let mut grants = Grants::default();
    grants
        .add_net(NetGrant::parse("http://example.com").unwrap())
        .unwrap();
    let again = NetGrant::parse("HTTP://Example.com:80/").unwrap();
    assert_eq!(
        grants.add_net(again).unwrap_err().to_string(),
        "\"HTTP://Example.com:80/\" is granted twice (as \"http://example.com\"): grant it once"
    );
    assert_eq!(grants.net().len(), 1);
}

#[test]
fn an_exec_grant_reads_resolved_paths_and_connects_to_real_sockets() {
    let tmp = tempfile::tempdir().unwrap();
    let sh = || ExecGrant::resolve("/bin/sh", Path::new("/"), None).unwrap();
    let missing = tmp.path().join("missing");
    let e = sh().allow_read(&missing).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("cannot resolve {}: ", missing.display())),
        "{e}"
    );
    assert!(std::error::Error::source(&e).is_some(), "the cause is kept");
    let grant = sh().allow_read(tmp.path().join(".")).unwrap();
    assert_eq!(grant.read(), [tmp.path().canonicalize().unwrap()]);

    let file = tmp.path().join("file");
    std::fs::write(&file, "").unwrap();
    for bad in [&file, &missing] {
        assert_eq!(
            sh().allow_socket(bad).unwrap_err().to_string(),
            format!(
                "{} is not a Unix socket: give the path of one that exists (start its server first)",
                bad.display()
            )
        );
    }
    let socket = tmp.path().join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let grant = sh().allow_socket(&socket).unwrap();
    assert_eq!(grant.sockets(), [socket.canonicalize().unwrap()]);
}
