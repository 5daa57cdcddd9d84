//! The page-cached data file every file workload reads and writes.
//!
//! One file of [`FILE_LEN`] bytes under `std::env::temp_dir()`, filled with a known pattern,
//! synced once (so no writeback of the fill competes with the measurements), then read back in
//! full so every page is in the page cache. It is removed when the fixture is dropped.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The size of one I/O: 4 KiB, and the alignment of every offset.
pub(crate) const BLOCK: usize = 4096;

/// The data file's length: 64 MiB.
pub(crate) const FILE_LEN: u64 = 64 * 1024 * 1024;

/// The temporary data file; deleted on drop.
#[derive(Debug)]
pub(crate) struct FileFixture {
    path: PathBuf,
    len: u64,
}

impl FileFixture {
    /// Creates, fills, syncs and pre-reads a [`FILE_LEN`]-byte file in the temp directory.
    pub(crate) fn create() -> io::Result<Self> {
        Self::create_sized(FILE_LEN)
    }

    /// Like [`FileFixture::create`] with `len` bytes (a multiple of 1 MiB; tests use small files).
    pub(crate) fn create_sized(len: u64) -> io::Result<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "baton-bench-{}-{}.dat",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let fixture = Self { path, len };
        fixture.fill()?;
        fixture.warm_page_cache()?;
        Ok(fixture)
    }

    /// Where the file lives, for runtimes that open it themselves (read and write access).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// How many [`BLOCK`]-sized blocks the file holds.
    pub(crate) fn blocks(&self) -> u64 {
        self.len / BLOCK as u64
    }

    /// Opens the file for reading and writing (every contender gets its own descriptor).
    pub(crate) fn open(&self) -> io::Result<File> {
        OpenOptions::new().read(true).write(true).open(&self.path)
    }

    fn fill(&self) -> io::Result<()> {
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&self.path)?;
        let chunk: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
        let mut written = 0;
        while written < self.len {
            file.write_all(&chunk)?;
            written += chunk.len() as u64;
        }
        file.sync_all()
    }

    fn warm_page_cache(&self) -> io::Result<()> {
        let mut file = File::open(&self.path)?;
        let mut chunk = vec![0_u8; 1024 * 1024];
        let mut total = 0_u64;
        loop {
            let n = file.read(&mut chunk)?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        if total == self.len {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "the data file {} holds {total} bytes after filling, expected {}",
                self.path.display(),
                self.len
            )))
        }
    }
}

impl Drop for FileFixture {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_file(&self.path) {
            eprintln!(
                "warning: could not remove the data file {}: {e}",
                self.path.display()
            );
        }
    }
}

/// A seeded xorshift64 stream of block-aligned offsets inside the data file.
#[derive(Debug, Clone)]
pub(crate) struct Offsets {
    state: u64,
    blocks: u64,
}

impl Offsets {
    /// A stream over `blocks` blocks; equal seeds give equal streams. A zero seed is remapped,
    /// since xorshift's all-zero state never leaves zero.
    pub(crate) fn new(seed: u64, blocks: u64) -> Self {
        Self {
            state: if seed == 0 {
                0x9E37_79B9_7F4A_7C15
            } else {
                seed
            },
            blocks: blocks.max(1),
        }
    }

    /// The next byte offset: a multiple of [`BLOCK`] below `blocks * BLOCK`.
    pub(crate) fn next_offset(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        (x % self.blocks) * BLOCK as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_aligned_and_inside_the_file() {
        let blocks = FILE_LEN / BLOCK as u64;
        let mut offsets = Offsets::new(42, blocks);
        for _ in 0..10_000 {
            let off = offsets.next_offset();
            assert_eq!(off % BLOCK as u64, 0);
            assert!(off + BLOCK as u64 <= FILE_LEN);
        }
    }

    #[test]
    fn equal_seeds_repeat_and_distinct_seeds_differ() {
        let take = |seed| {
            let mut o = Offsets::new(seed, 16_384);
            (0..64).map(|_| o.next_offset()).collect::<Vec<_>>()
        };
        assert_eq!(take(7), take(7));
        assert_ne!(take(7), take(8));
        assert_ne!(take(0), vec![0; 64], "a zero seed must not stick at zero");
    }

    #[test]
    fn offsets_spread_over_the_file() {
        let mut offsets = Offsets::new(1, 16_384);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..4096 {
            seen.insert(offsets.next_offset());
        }
        assert!(seen.len() > 3000, "only {} distinct offsets", seen.len());
    }
}
