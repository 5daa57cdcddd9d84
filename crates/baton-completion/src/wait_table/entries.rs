//! The table's entries, indexed by their wait slot number: slot numbers are small and dense
//! (the identity allocator reuses freed ones first), so a vector replaces a hash map and a
//! lookup costs no hashing.

use baton_cancel::ContainedDrop;

use super::WaitEntry;
use crate::identity::WaitId;

/// Entries by slot number. Invariant: `len` counts the occupied places.
#[derive(Default)]
pub(super) struct Entries {
    places: Vec<Option<WaitEntry>>,
    len: usize,
}

impl Entries {
    fn index(id: WaitId) -> usize {
        // A `u32` always fits a `usize` on the 64-bit targets io_uring runs on.
        id.get() as usize
    }

    /// Stores `entry` at `id`'s place. The allocator hands each live slot out once, so the
    /// place is free; should it not be, the entry there is destroyed contained, as user data.
    pub(super) fn insert(&mut self, id: WaitId, entry: WaitEntry) {
        let index = Self::index(id);
        if index >= self.places.len() {
            self.places.resize_with(index + 1, || None);
        }
        match self.places[index].replace(entry) {
            None => self.len += 1,
            Some(previous) => {
                debug_assert!(false, "wait slot {index} was handed out twice");
                let _ = ContainedDrop::drop_value(previous);
            }
        }
    }

    #[cfg(test)]
    pub(super) fn get(&self, id: WaitId) -> Option<&WaitEntry> {
        self.places.get(Self::index(id))?.as_ref()
    }

    pub(super) fn get_mut(&mut self, id: WaitId) -> Option<&mut WaitEntry> {
        self.places.get_mut(Self::index(id))?.as_mut()
    }

    pub(super) fn remove(&mut self, id: WaitId) -> Option<WaitEntry> {
        let removed = self.places.get_mut(Self::index(id))?.take();
        if removed.is_some() {
            self.len -= 1;
        }
        removed
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &WaitEntry> {
        self.places.iter().flatten()
    }

    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut WaitEntry> {
        self.places.iter_mut().flatten()
    }

    /// Empties the table, handing every entry out.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = WaitEntry> + '_ {
        self.len = 0;
        self.places.drain(..).flatten()
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }
}
