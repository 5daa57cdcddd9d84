//! End to end: real files through the facade — a file larger than the ring (many more
//! requests than ring entries, so admission queues them), whole-file helpers, and bad input
//! that must give clear errors.

use baton_tests::assert_kind;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use baton::fs::{File, OpenOptions};

fn temp_path(name: &str) -> std::path::PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("baton-e2e-{name}-{}-{n}", std::process::id()))
}

const CHUNK: usize = 64 * 1024;
const CHUNKS: usize = 256; // 16 MiB through a ring of 8 entries

fn pattern(chunk: usize) -> Vec<u8> {
    (0..CHUNK)
        .map(|i| ((i * 7 + chunk * 13) % 251) as u8)
        .collect()
}

#[test]
fn a_file_larger_than_the_ring_written_concurrently_reads_back_intact() -> io::Result<()> {
    let rt = baton::Builder::new().ring_entries(8).build()?;
    let path = temp_path("large");
    rt.block_on(async {
        let file = Arc::new(baton_tests::create_read_write(&path).await?);
        let writes: Vec<_> = (0..CHUNKS)
            .map(|i| {
                let file = Arc::clone(&file);
                baton::spawn(async move {
                    let (res, _) = file.write_all_at(pattern(i), (i * CHUNK) as u64).await;
                    res
                })
            })
            .collect();
        for write in writes {
            write.await.map_err(io::Error::other)??;
        }
        file.sync_all().await?;
        for i in 0..CHUNKS {
            let (res, buf) = file.read_exact_at(vec![0; CHUNK], (i * CHUNK) as u64).await;
            res?;
            assert!(buf == pattern(i), "chunk {i} differs");
        }
        let whole = baton::fs::read(&path).await?;
        assert_eq!(whole.len(), CHUNK * CHUNKS);
        let (res, buf) = file.read_at(vec![0; 16], (CHUNK * CHUNKS) as u64).await;
        assert_eq!(res?, 0, "a read past the end of the file reads nothing");
        assert_eq!(buf.len(), 0, "the initialized length is exactly the count");
        assert_eq!(buf.capacity(), 16);
        baton::fs::remove_file(&path).await
    })
}

#[test]
fn write_then_read_whole_file_helpers() -> io::Result<()> {
    let rt = baton::Runtime::new()?;
    let path = temp_path("helpers");
    rt.block_on(async {
        baton::fs::write(&path, b"hello, ring").await?;
        assert_eq!(baton::fs::read(&path).await?, b"hello, ring");
        let file = File::open(&path).await?;
        let start = file.start_sync();
        start.await?;
        file.close().await?;
        baton::fs::remove_file(&path).await?;
        assert_kind(
            baton::fs::read(&path).await,
            io::ErrorKind::NotFound,
            "the file was removed",
        );
        Ok(())
    })
}

#[test]
fn bad_input_gives_clear_errors() -> io::Result<()> {
    baton_tests::assert_build_refused(baton::Builder::new().ring_entries(0), "ring_entries");

    let rt = baton::Runtime::new()?;
    let path = temp_path("bad");
    rt.block_on(async {
        assert_kind(
            File::open("/nonexistent/baton/e2e").await,
            io::ErrorKind::NotFound,
            "no such file",
        );
        assert_kind(
            File::open("bad\0path").await,
            io::ErrorKind::InvalidInput,
            "NUL in path",
        );
        let file = File::create(&path).await?;
        // As std's `write_at(&[], 0)`: nothing to write is `Ok(0)`.
        let (empty, _) = file.write_at(Vec::new(), 0).await;
        assert_eq!(empty.map_err(|e| e.kind()), Ok(0));
        let (write_only, _) = file.read_at(vec![0; 4], 0).await;
        assert!(write_only.is_err(), "reading a write-only file fails");
        baton::fs::remove_file(&path).await
    })?;

    let outside = baton::Handle::try_current().expect_err("no runtime on this thread");
    assert!(
        outside.to_string().contains("Runtime::block_on"),
        "{outside}"
    );
    Ok(())
}

/// io_uring reads offset −1 as "use the file cursor": a positional call with an offset above
/// `i64::MAX` must be refused before it reaches the ring, never read or write at the cursor —
/// including the loops of `read_exact_at` and `write_all_at`.
#[test]
fn offsets_above_i64_max_are_invalid_input_and_leave_the_file_unchanged() -> io::Result<()> {
    fn refused<T: std::fmt::Debug>(result: io::Result<T>, what: &str) {
        let err = result.expect_err(what);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{what}: {err}");
        assert_eq!(
            err.raw_os_error(),
            None,
            "{what}: refused before the kernel: {err}"
        );
    }
    let rt = baton::Runtime::new()?;
    let path = temp_path("offsets");
    std::fs::write(&path, b"0123456789")?;
    rt.block_on(async {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .await?;
        for offset in [u64::MAX, i64::MAX as u64 + 1] {
            let (res, _buf) = file.read_exact_at(vec![0; 16], offset).await;
            refused(res, "read_exact_at");
            let (res, buf) = file.read_at(Vec::with_capacity(4), offset).await;
            refused(res, "read_at");
            assert!(buf.is_empty());
            let (res, buf) = file.write_at(b"XY".to_vec(), offset).await;
            refused(res, "write_at");
            assert_eq!(buf, b"XY");
            let (res, buf) = file.write_all_at(b"XY".to_vec(), offset).await;
            refused(res, "write_all_at");
            assert_eq!(buf, b"XY");
        }
        file.close().await?;
        assert_eq!(
            std::fs::read(&path)?,
            b"0123456789",
            "the file is unchanged"
        );
        baton::fs::remove_file(&path).await
    })
}
