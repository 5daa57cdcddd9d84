//! Durability permits: syncs of one file run one at a time, and a sync of a clean file completes
//! as soon as it holds the permit.
//!
//! Rules (cited from `state/` as D1 ... D4):
//!
//! D1. A file is identified by its `Arc<OwnedFd>` allocation, checked through a `Weak` so a
//!    reused address is never mistaken for the old file.
//!
//! D2. At most one sync per file holds the permit; others wait in arrival order.
//!
//! D3. A file becomes *clean* when a sync that started at write epoch `e` succeeds and no write
//!    to the file completed through this driver since (epoch still `e`). Every completed write
//!    bumps the epoch and makes the file dirty. A file the driver never synced is dirty.
//!    A truncate through the driver counts as a write. Writes made outside this driver (or
//!    through another `Arc` of the same file) are not seen unless reported with
//!    `DriverHandle::note_write`: report them, sync them through a fresh `Arc`, or issue the
//!    `fsync` yourself.
//! D4. Granting the permit to a sync of a clean file completes that sync at once (no SQE) and
//!    passes the permit on.

use std::collections::{HashMap, VecDeque};
use std::os::fd::OwnedFd;
use std::sync::{Arc, Weak};

use crate::key::RequestKey;

/// The epoch a sync saw when it was submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SyncStart {
    epoch: u64,
}

#[derive(Debug)]
struct FileSync {
    file: Weak<OwnedFd>,
    holder: Option<RequestKey>,
    waiting: VecDeque<RequestKey>,
    epoch: u64,
    clean_at: Option<u64>,
}

/// The outcome of asking for a file's permit.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grant {
    /// The sync holds the permit and the file has unsynced writes: submit it.
    Dirty,
    /// The sync holds the permit and the file is clean: complete it now (D4).
    Clean,
    /// Another sync holds the permit: wait (D2).
    Wait,
}

/// Per-file permit and dirtiness table.
#[derive(Debug, Default)]
pub(crate) struct Durability {
    files: HashMap<usize, FileSync>,
    /// Table size at which inserting a new file first drops entries of dropped files (at
    /// least 64); doubles with what survives, so scans are amortized over insertions.
    prune_at: usize,
    /// Full scans for dropped files so far (tests check they stay rare).
    #[cfg(all(test, not(loom)))]
    pub(crate) scans: usize,
}

#[cfg(all(test, not(loom)))]
impl Durability {
    /// Files the table keeps an entry for (tests check dropped files are pruned).
    pub(crate) fn tracked_files(&self) -> usize {
        self.files.len()
    }
}

fn file_key(fd: &Arc<OwnedFd>) -> usize {
    Arc::as_ptr(fd) as usize
}

impl Durability {
    fn entry(&mut self, fd: &Arc<OwnedFd>) -> &mut FileSync {
        let key = file_key(fd);
        let stale = self.files.get(&key).is_some_and(|f| {
            !std::ptr::eq(f.file.as_ptr(), Arc::as_ptr(fd)) || f.file.strong_count() == 0
        });
        if stale {
            self.files.remove(&key);
        }
        if !self.files.contains_key(&key) && self.files.len() >= self.prune_at.max(64) {
            #[cfg(all(test, not(loom)))]
            {
                self.scans += 1;
            }
            self.files.retain(|_, f| {
                f.file.strong_count() > 0 || f.holder.is_some() || !f.waiting.is_empty()
            });
            self.prune_at = self.files.len() * 2;
        }
        self.files.entry(key).or_insert_with(|| FileSync {
            file: Arc::downgrade(fd),
            holder: None,
            waiting: VecDeque::new(),
            epoch: 0,
            clean_at: None,
        })
    }

    /// Asks for `fd`'s permit on behalf of the sync `key` (D2 and D4).
    pub(crate) fn acquire(&mut self, fd: &Arc<OwnedFd>, key: RequestKey) -> Grant {
        let file = self.entry(fd);
        if file.holder.is_some() {
            file.waiting.push_back(key);
            return Grant::Wait;
        }
        file.holder = Some(key);
        if file.clean_at == Some(file.epoch) {
            Grant::Clean
        } else {
            Grant::Dirty
        }
    }

    /// Records that the holder's SQE is being submitted now.
    pub(crate) fn started(&mut self, fd: &Arc<OwnedFd>) -> SyncStart {
        SyncStart {
            epoch: self.entry(fd).epoch,
        }
    }

    /// A write to `fd` completed (D3).
    pub(crate) fn write_completed(&mut self, fd: &Arc<OwnedFd>) {
        if let Some(file) = self.files.get_mut(&file_key(fd))
            && std::ptr::eq(file.file.as_ptr(), Arc::as_ptr(fd))
        {
            file.epoch += 1;
        }
    }

    /// The holder `key` finished (`synced` carries its start if it succeeded). Returns the next
    /// waiting sync, to which the permit passes; the caller grants it (checking that the key is
    /// still live) and calls back here if it is stale.
    pub(crate) fn release(
        &mut self,
        fd: &Arc<OwnedFd>,
        key: RequestKey,
        synced: Option<SyncStart>,
    ) -> Option<(RequestKey, Grant)> {
        let file = self.entry(fd);
        if file.holder != Some(key) {
            file.waiting.retain(|&k| k != key);
            return None;
        }
        if let Some(start) = synced
            && start.epoch == file.epoch
        {
            file.clean_at = Some(file.epoch);
        }
        file.holder = file.waiting.pop_front();
        let next = file.holder?;
        let grant = if file.clean_at == Some(file.epoch) {
            Grant::Clean
        } else {
            Grant::Dirty
        };
        Some((next, grant))
    }
}
