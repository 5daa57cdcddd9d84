//! Property test: random positional writes through the ring (on a deliberately small ring, with
//! batches issued concurrently so many are queued) leave the file exactly as the same writes leave an in-memory model.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use proptest::prelude::*;

fn temp_path() -> std::path::PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("baton-e2e-prop-{}-{n}", std::process::id()))
}

/// Splits `writes` into batches of writes that do not overlap each other, in order: within a
/// batch the order cannot matter, so the model (which applies them one by one) still holds.
fn batches(writes: &[(u64, Vec<u8>)]) -> Vec<Vec<(u64, Vec<u8>)>> {
    let mut batches: Vec<Vec<(u64, Vec<u8>)>> = Vec::new();
    for (offset, data) in writes {
        let end = offset + data.len() as u64;
        let overlaps = batches.last().is_some_and(|batch| {
            batch
                .iter()
                .any(|(o, d)| *offset < o + d.len() as u64 && *o < end)
        });
        match batches.last_mut() {
            Some(batch) if !overlaps => batch.push((*offset, data.clone())),
            _ => batches.push(vec![(*offset, data.clone())]),
        }
    }
    batches
}

/// Applies `writes` batch by batch: every write of a batch is issued at once (two thirds from
/// spawned tasks, the rest polled by the root together), so on a ring of 2 most of them queue
/// for ring space; a batch is awaited before the next, so later writes win overlaps as in the
/// model.
fn run_writes(writes: &[(u64, Vec<u8>)]) -> io::Result<Vec<u8>> {
    let rt = baton::Builder::new().ring_entries(2).build()?;
    let path = temp_path();
    let result = rt.block_on(async {
        let file = Arc::new(baton::fs::File::create(&path).await?);
        for batch in batches(writes) {
            let mut tasks = Vec::new();
            let mut in_root = Vec::new();
            for (i, (offset, data)) in batch.into_iter().enumerate() {
                let file = Arc::clone(&file);
                let write = async move { file.write_all_at(data, offset).await.0 };
                if i % 3 == 2 {
                    in_root.push(Box::pin(write));
                } else {
                    tasks.push(baton::spawn(write));
                }
            }
            for result in join_all(in_root).await {
                result?;
            }
            for task in tasks {
                task.await.map_err(io::Error::other)??;
            }
        }
        file.sync_data().await?;
        baton::fs::read(&path).await
    });
    let _ = std::fs::remove_file(&path);
    result
}

/// Polls every future together until all are done (their requests are all issued at once).
async fn join_all<F: Future + Unpin>(mut futures: Vec<F>) -> Vec<F::Output> {
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match Pin::new(future).poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

fn model(writes: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut file = Vec::new();
    for (offset, data) in writes {
        let offset = *offset as usize;
        if file.len() < offset + data.len() {
            file.resize(offset + data.len(), 0);
        }
        file[offset..offset + data.len()].copy_from_slice(data);
    }
    file
}

proptest! {
    #[test]
    fn prop_random_writes_match_a_model(
        writes in prop::collection::vec(
            (0u64..200_000, prop::collection::vec(any::<u8>(), 1..20_000)),
            1..12,
        )
    ) {
        let written = run_writes(&writes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(written, model(&writes));
    }
}
