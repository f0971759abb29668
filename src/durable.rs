//! Durable file writes: a file is replaced atomically (a temporary file,
//! synced, renamed over the target, the directory synced), so a crash at
//! any moment leaves the old file or the new one, never a mix. The file
//! writers and the on-disk catalog write through it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Writes `path` atomically: `write` fills a temporary file in the same
/// directory, which is flushed, synced to disk and renamed over `path`; the
/// directory is synced last. A crash at any moment leaves either the old
/// file or the new one, never a mix.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    let directory = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| Error::Invalid(format!("'{}' is not a file path", path.display())))?;
    // Unique per process and per call, so that two writers of one target
    // never share a temporary file.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let temporary = directory.join(format!(
        ".{}.tmp-{}-{}",
        file_name.to_string_lossy(),
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .map_err(|e| Error::io(&temporary, e))?;
        let mut writer = BufWriter::new(file);
        write(&mut writer)?;
        writer.flush().map_err(|e| Error::io(&temporary, e))?;
        let file = writer
            .into_inner()
            .map_err(|e| Error::io(&temporary, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&temporary, e))?;
        std::fs::rename(&temporary, path).map_err(|e| Error::io(path, e))?;
        sync_directory(&directory)
    })();
    if result.is_err() {
        // Best effort: the temporary file is garbage either way.
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// Syncs a directory so that a rename inside it is durable.
pub fn sync_directory(directory: &Path) -> Result<()> {
    File::open(directory)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(directory, e))
}
