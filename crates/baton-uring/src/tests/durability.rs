//! Tests of `durability.rs`.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use crate::durability::*;
use crate::key::RequestKey;

fn file() -> Arc<OwnedFd> {
    Arc::new(OwnedFd::from(
        std::fs::File::open("/dev/null").expect("open /dev/null"),
    ))
}

/// A dirty file whose first sync (key 1) has started and whose second (key 2) waits for it.
fn first_sync_started_second_waiting() -> (Durability, Arc<OwnedFd>, SyncStart) {
    let mut d = Durability::default();
    let f = file();
    assert_eq!(d.acquire(&f, key(1)), Grant::Dirty);
    assert_eq!(d.acquire(&f, key(2)), Grant::Wait);
    let start = d.started(&f);
    (d, f, start)
}

fn key(index: u32) -> RequestKey {
    RequestKey {
        index,
        generation: 0,
    }
}

#[test]
fn second_sync_waits_for_the_first() {
    let (mut d, f, start) = first_sync_started_second_waiting();
    assert_eq!(
        d.release(&f, key(1), Some(start)),
        Some((key(2), Grant::Clean))
    );
}

#[test]
fn write_during_sync_keeps_the_file_dirty() {
    let (mut d, f, start) = first_sync_started_second_waiting();
    d.write_completed(&f);
    assert_eq!(
        d.release(&f, key(1), Some(start)),
        Some((key(2), Grant::Dirty))
    );
}

#[test]
fn many_tracked_files_are_not_rescanned_on_every_sync() {
    let mut d = Durability::default();
    let files: Vec<Arc<OwnedFd>> = (0..100).map(|_| file()).collect();
    for (i, f) in files.iter().enumerate() {
        let k = key(i as u32);
        assert_eq!(d.acquire(f, k), Grant::Dirty);
        assert_eq!(d.release(f, k, None), None);
    }
    let before = d.scans;
    for i in 0..1000 {
        let k = key(1000 + i);
        assert_eq!(d.acquire(&files[0], k), Grant::Dirty);
        assert_eq!(d.release(&files[0], k, None), None);
    }
    assert!(
        d.scans - before <= 1,
        "{} scans for syncs of one known file",
        d.scans - before
    );
}

#[test]
fn dropped_files_are_pruned_as_new_ones_arrive() {
    let mut d = Durability::default();
    for i in 0..1000 {
        let f = file();
        assert_eq!(d.acquire(&f, key(i)), Grant::Dirty);
        assert_eq!(d.release(&f, key(i), None), None);
    }
    assert!(
        d.tracked_files() <= 130,
        "{} entries kept",
        d.tracked_files()
    );
}

#[test]
fn failed_sync_leaves_the_file_dirty() {
    let mut d = Durability::default();
    let f = file();
    assert_eq!(d.acquire(&f, key(1)), Grant::Dirty);
    assert_eq!(d.release(&f, key(1), None), None);
    assert_eq!(d.acquire(&f, key(2)), Grant::Dirty);
}
