//! Finding the processes a test started, by a marker in their environment.
//! Self-contained, so that the CLI tests include it too (`#[path]`).

use std::time::Instant;

/// A marker no other test uses.
pub fn marker(test: &str) -> String {
    format!("{test}-{}-{:?}", std::process::id(), Instant::now())
}

/// The processes whose environment holds `TINY_HARNESS_TEST_MARKER=marker`
/// (zombies have no environment, so they do not count).
pub fn pids_with(marker: &str) -> Vec<u32> {
    let needle = format!("TINY_HARNESS_TEST_MARKER={marker}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(environ) = std::fs::read(entry.path().join("environ"))
            && environ
                .split(|&b| b == 0)
                .any(|var| var == needle.as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}
