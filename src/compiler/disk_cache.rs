//! The persistent side of the whole-grammar cache ([`crate::CompilerConfig::disk_cache`]): compiled
//! grammars saved in a directory, so that a restarted server (or another process) loads them
//! instead of compiling.
//!
//! * **Content-addressed**: a file's name is a 128-bit hash of the whole-grammar cache key
//!   (input kind, source, front-end and compiler options), the vocabulary's
//!   [fingerprint](crate::Vocabulary::fingerprint) and the [saved format
//!   version](crate::SAVED_FORMAT_VERSION): `<32 hex digits>.mfg`. A changed input, option,
//!   tokenizer or format never reads an old file.
//! * **Atomic writes**: a grammar is written to a temporary file in the same directory, then
//!   renamed over its name, so a reader (another process) sees a whole file or none. Two
//!   processes writing the same grammar write the same bytes; the last rename wins.
//! * **Self-healing**: a file that does not load (truncated, corrupted, another vocabulary) is
//!   removed and the grammar compiled and written again.
//! * **Size-bounded**: after each write, while the directory's `.mfg` files exceed the byte
//!   budget, the least recently used (oldest modification time; a hit refreshes it) is
//!   removed.
//!
//! The disk is a cache: any I/O failure (read-only directory, full disk) falls back to
//! compiling and is counted in [`crate::GrammarCacheStats::disk_errors`], never returned.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use crate::cache::MaskPool;
use crate::compiled::{CompiledGrammar, FORMAT_VERSION};
use crate::error::Error;
use crate::tokenizer::Vocabulary;

/// The extension of saved grammar files in a cache directory.
const EXTENSION: &str = "mfg";

/// A cache directory shared by the compilers of one or more processes.
#[derive(Debug)]
pub(crate) struct DiskCache {
    dir: PathBuf,
    max_bytes: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    errors: AtomicU64,
}

/// Counters of a [`DiskCache`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DiskStats {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) errors: u64,
}

impl DiskCache {
    pub(crate) fn new(dir: PathBuf, max_bytes: u64) -> Self {
        DiskCache { dir, max_bytes, hits: AtomicU64::new(0), misses: AtomicU64::new(0), errors: AtomicU64::new(0) }
    }

    pub(crate) fn stats(&self) -> DiskStats {
        DiskStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
        }
    }

    /// The grammar saved under `key` (the whole-grammar cache key), or `compile`'s, saved.
    pub(crate) fn get_or_compile(
        &self,
        key: u64,
        vocab: &Vocabulary,
        pool: Option<&Arc<MaskPool>>,
        compile: impl FnOnce() -> Result<CompiledGrammar, Error>,
    ) -> Result<CompiledGrammar, Error> {
        let path = self.path(key, vocab);
        if let Ok(bytes) = fs::read(&path) {
            match CompiledGrammar::deserialize_with_pool(&bytes, vocab, pool.cloned()) {
                Ok(grammar) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    // Refresh the modification time: eviction removes the least recently used.
                    let _ = fs::File::options().write(true).open(&path).and_then(|f| f.set_modified(SystemTime::now()));
                    return Ok(grammar);
                }
                Err(_) => {
                    self.errors.fetch_add(1, Ordering::Relaxed);
                    let _ = fs::remove_file(&path);
                }
            }
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let grammar = compile()?;
        if self.store(&path, &grammar.serialize()).is_err() {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        Ok(grammar)
    }

    /// The file of `key` for `vocab`.
    fn path(&self, key: u64, vocab: &Vocabulary) -> PathBuf {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(b"maskforge-disk-cache");
        h.update(&key.to_le_bytes());
        h.update(&vocab.fingerprint().to_le_bytes());
        h.update(&FORMAT_VERSION.to_le_bytes());
        self.dir.join(format!("{:032x}.{EXTENSION}", h.digest128()))
    }

    /// Writes `bytes` to `path` atomically, then evicts down to the budget.
    fn store(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        // Unique among the processes and threads writing the directory.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("grammar");
        let temp =
            self.dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        let written = fs::write(&temp, bytes).and_then(|()| fs::rename(&temp, path));
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written?;
        self.evict()
    }

    /// Removes the least recently used files while the directory holds more than the budget.
    fn evict(&self) -> std::io::Result<()> {
        let mut files: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let path = entry.path();
            if path.extension().is_some_and(|e| e == EXTENSION) {
                // Another process may have removed it meanwhile: skip it.
                if let Ok(meta) = entry.metadata() {
                    files.push((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len(), path));
                }
            }
        }
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        files.sort();
        for (_, len, path) in files {
            if total <= self.max_bytes {
                break;
            }
            // Already gone (another process evicted it) is as good as removed.
            let _ = fs::remove_file(&path);
            total -= len;
        }
        Ok(())
    }
}
