//! Property test: random positional writes through the ring (on a deliberately small ring, so
//! many are queued) leave the file exactly as the same writes leave an in-memory model.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;

fn temp_path() -> std::path::PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("baton-e2e-prop-{}-{n}", std::process::id()))
}

/// Applies `writes` in order (each awaited before the next, so later writes win overlaps, as in
/// the model), with every third one issued from a spawned task.
fn run_writes(writes: &[(u64, Vec<u8>)]) -> io::Result<Vec<u8>> {
    let rt = baton::Builder::new().ring_entries(2).build()?;
    let path = temp_path();
    let result = rt.block_on(async {
        let file = Arc::new(baton::fs::File::create(&path).await?);
        for (i, (offset, data)) in writes.iter().enumerate() {
            if i % 3 == 0 {
                let file = Arc::clone(&file);
                let (offset, data) = (*offset, data.clone());
                baton::spawn(async move { file.write_all_at(data, offset).await.0 })
                    .await
                    .map_err(io::Error::other)??;
            } else {
                file.write_all_at(data.clone(), *offset).await.0?;
            }
        }
        file.sync_data().await?;
        baton::fs::read(&path).await
    });
    let _ = std::fs::remove_file(&path);
    result
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
