//! Copies a file through the ring, showing progress.
//!
//! ```text
//! cargo run --release --example copy -- SOURCE DESTINATION
//! cargo run --release --example copy            # copies a generated 64 MiB temporary file
//! ```
//!
//! Reads and writes are pipelined: while one chunk is being written, the next one is read.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use baton::fs::File;

const CHUNK: usize = 1024 * 1024;
const DEMO_BYTES: usize = 64 * 1024 * 1024;

fn main() -> io::Result<()> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let rt = baton::Runtime::new()?;
    match (args.next(), args.next()) {
        (Some(source), Some(destination)) => rt.block_on(copy(&source, &destination)),
        (None, _) => rt.block_on(demo()),
        (Some(_), None) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "usage: copy [SOURCE DESTINATION]",
        )),
    }
}

/// Copies `source` to `destination`, printing a progress line, then syncs the copy.
async fn copy(source: &Path, destination: &Path) -> io::Result<()> {
    let started = Instant::now();
    let input = File::open(source).await?;
    let total = input.metadata().await?.len();
    let output = Arc::new(File::create(destination).await?);
    let mut offset = 0u64;
    let (res, mut chunk) = input.read_at(vec![0; CHUNK], 0).await;
    let mut n = res?;
    while n > 0 {
        chunk.truncate(n);
        // Write this chunk while the next one is read.
        let write = baton::spawn({
            let output_chunk = std::mem::take(&mut chunk);
            let output = Arc::clone(&output);
            async move { output.write_all_at(output_chunk, offset).await }
        });
        let (res, next) = input.read_at(vec![0; CHUNK], offset + n as u64).await;
        let (written, _) = write.await.map_err(io::Error::other)?;
        written?;
        offset += n as u64;
        progress(offset, total);
        n = res?;
        chunk = next;
    }
    output.sync_all().await?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "\ncopied {} bytes in {:.2} s ({:.0} MiB/s)",
        offset,
        seconds,
        offset as f64 / (1024.0 * 1024.0) / seconds.max(1e-9)
    );
    Ok(())
}

fn progress(done: u64, total: u64) {
    let percent = if total == 0 {
        100
    } else {
        done * 100 / total.max(done)
    };
    let filled = (percent / 5) as usize;
    print!(
        "\r[{}{}] {percent:>3}% {done} bytes",
        "#".repeat(filled),
        " ".repeat(20 - filled)
    );
    let _ = io::stdout().flush();
}

/// Without arguments: copy a generated file, check the copy, and clean up.
async fn demo() -> io::Result<()> {
    let dir = std::env::temp_dir();
    let source = dir.join(format!("baton-copy-src-{}", std::process::id()));
    let destination = dir.join(format!("baton-copy-dst-{}", std::process::id()));
    let data: Vec<u8> = (0..DEMO_BYTES).map(|i| (i % 253) as u8).collect();
    baton::fs::write(&source, &data).await?;
    let copied = copy(&source, &destination).await;
    let same = copied.is_ok() && baton::fs::read(&destination).await? == data;
    baton::fs::remove_file(&source).await?;
    baton::fs::remove_file(&destination).await?;
    copied?;
    if !same {
        return Err(io::Error::other("the copy differs from the source"));
    }
    println!("the copy is byte-for-byte equal to the source");
    Ok(())
}
