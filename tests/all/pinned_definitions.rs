//! What the bundled plugins register, pinned tool by tool: a plugin that
//! changes how it builds its registration (moving onto the guest SDK, say)
//! must register exactly what it did before, since every user's lock pins
//! these hashes and a changed one would refuse the tool under `--locked`.
//! A deliberate change of a definition updates this table in the same
//! commit, and says so.

use tiny_harness_host::{DirGrant, DirMode};

use crate::common::{host, spec};

/// Each tool's full name (under the plugin's crate name) and its
/// definition's pin hash, as `tiny-harness.lock` records it.
const PINNED: &[(&str, &str)] = &[
    (
        "fs/workspace.list_dir",
        "9b1f2d4c4850a9bad1fa8032fb4eb07e5fd55310ec65753a0329b09507dcbc8c",
    ),
    (
        "fs/workspace.read_file",
        "f8a632cf917de94764cd0835e952f81c9b89290adadf6e42f42563466ba10d2d",
    ),
    (
        "fs/workspace.search",
        "5a995d6680a68c2b1e748f31037ebdc461600d4989ae26f4689c7424dffdaf1b",
    ),
    (
        "fs/workspace.stat",
        "5ea2c075477302133f680074810a57c2bb993a46681b62a54a655e52a556d8c3",
    ),
    (
        "fs/workspace.write_file",
        "7ebaf41a121d650d3ca22c5c42a8fec4fe91c3acc7e549ec8397709a040ac50d",
    ),
    (
        "hello/hello.greet",
        "cf1afb368bcc220eb72159c34bf5b09e68c3b72da20bfb5819039276c05fbf8c",
    ),
    (
        "net/http.get",
        "276636559cd9f339bd526104719ac43357bd97502d5992491edf6a3b7da877ac",
    ),
    (
        "net/http.request",
        "8a272d1a887085a87f121b295cf9ef6452ce33846aa77c9ea5ad5d67ef8d2444",
    ),
    (
        "shell/exec.run",
        "2b5e8f939988457a83b2fed764e2057ffd27954b6781c091a0dfd8936bd2d978",
    ),
];

#[tokio::test]
async fn every_bundled_definition_is_what_the_lock_of_an_existing_config_pins() {
    let dir = tempfile::tempdir().unwrap();
    let mut fs = spec("fs", "fs");
    fs.grants
        .add_dir(DirGrant::new(dir.path(), "/workspace", DirMode::ReadWrite).unwrap())
        .unwrap();
    let host = host(vec![
        fs,
        spec("hello", "hello"),
        spec("net", "net"),
        spec("shell", "shell"),
    ])
    .await;
    let mut found: Vec<(String, String)> = host
        .registry()
        .tools()
        .map(|t| (t.name.to_string(), t.definition_hash.to_string()))
        .collect();
    found.sort();
    let listed: Vec<String> = found
        .iter()
        .map(|(name, hash)| format!("    ({name:?}, {hash:?}),"))
        .collect();
    let pinned: Vec<(String, String)> = PINNED
        .iter()
        .map(|(n, h)| ((*n).to_owned(), (*h).to_owned()))
        .collect();
    assert_eq!(
        found,
        pinned,
        "a bundled plugin's registration changed; if that is meant, the table is now:\n{}",
        listed.join("\n")
    );
}
