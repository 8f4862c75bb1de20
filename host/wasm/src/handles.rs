//! Host handles a call holds: how many it may open, and which of them a
//! blocked host operation still holds after the call is gone.
//!
//! Every file or directory a guest opens is a host file descriptor in its
//! store's resource table, and so are the streams and other resources WASI
//! hands out. Without a cap one call could take every descriptor the host
//! process may have (about 20,000 here) and break every other call and the
//! host itself. So:
//! - the table is capped at [`Limits::open_files`](super::Limits) plus
//!   [`HANDLE_HEADROOM`], a hard cap on everything a call holds (exceeding
//!   it traps the guest);
//! - `open-at` is wrapped: once the table holds `open_files` handles, the
//!   next open fails inside the guest with `insufficient-memory` (`ENOMEM`,
//!   as the kernel reports exhausted kernel resources), an ordinary I/O
//!   error the plugin can handle, and nothing is opened.
//!
//! A call stopped at its deadline while a host operation blocks (opening a
//! FIFO inside a granted directory, a hung network filesystem) leaves that
//! operation running on a blocking thread that nothing can interrupt. The
//! thread holds its descriptor; `Stalled` keeps weak references to the
//! call's descriptors, so the engine can count such calls until the
//! operation ends and refuse new calls once too many threads are stuck.

use std::sync::{Arc, Mutex, Weak};

use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};

use super::CallState;

/// The WASI filesystem interface whose `open-at` is wrapped, as the linker
/// names it (wasmtime-wasi 48 implements 0.2.12; guests importing any 0.2
/// version link to it).
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Handles a call may hold beyond `open_files` before it traps: streams
/// and pollables made from handles it already has.
pub const HANDLE_HEADROOM: usize = 64;

/// Caps `table` for a call limited to `open_files` descriptors.
pub(crate) fn cap_table(table: &mut ResourceTable, open_files: usize) {
    table.set_max_capacity(open_files.saturating_add(HANDLE_HEADROOM));
}

/// How many handles `table` holds.
fn held(table: &mut ResourceTable) -> usize {
    table.iter_mut().count()
}

/// Replaces `open-at` in `linker` with one that refuses to open beyond the
/// call's `open_files` and otherwise does what wasmtime-wasi does.
pub(crate) fn limit_opens(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store,
         (fd, path_flags, path, open_flags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                let limit = state.open_files;
                if held(state.table()) >= limit {
                    return Ok((Err(ErrorCode::InsufficientMemory),));
                }
                let mut view = state.filesystem();
                let opened =
                    HostDescriptor::open_at(&mut view, fd, path_flags, path, open_flags, flags)
                        .await;
                Ok((match opened {
                    Ok(fd) => Ok(fd),
                    Err(error) => Err(error.downcast()?),
                },))
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Weak references to the descriptors of one call that was abandoned at
/// its deadline. While any of them is alive, a host operation (on a
/// blocking thread) still holds it.
pub(crate) struct Abandoned(Vec<Weak<std::fs::File>>);

impl Abandoned {
    /// The call's descriptors, taken from its table before the store is
    /// dropped.
    pub(crate) fn of(table: &mut ResourceTable) -> Self {
        let handles = table
            .iter_mut()
            .filter_map(|entry| entry.downcast_ref::<Descriptor>())
            .map(|descriptor| match descriptor {
                Descriptor::File(file) => Arc::downgrade(&file.file),
                Descriptor::Dir(dir) => Arc::downgrade(&dir.dir),
            })
            .collect();
        Abandoned(handles)
    }

    /// Whether a host operation still holds one of them.
    fn held(&self) -> bool {
        self.0.iter().any(|handle| handle.strong_count() > 0)
    }
}

/// Calls abandoned at their deadline whose host operations still run, for
/// one engine.
#[derive(Default)]
pub(crate) struct Stalled {
    calls: Mutex<Vec<Abandoned>>,
}

impl Stalled {
    /// Records an abandoned call, once its store has been dropped, if a host
    /// operation still holds one of its descriptors.
    pub(crate) fn record(&self, call: Abandoned) {
        if call.held() {
            self.lock().push(call);
        }
    }

    /// How many abandoned calls still have a host operation running.
    pub(crate) fn count(&self) -> usize {
        let mut calls = self.lock();
        calls.retain(Abandoned::held);
        calls.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Abandoned>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
