//! Where each registered external wait's completion goes (worker rule W5), stored by wait slot
//! number: slot numbers are small and dense (the identity allocator reuses freed ones first),
//! so a vector replaces a hash map and routing a completion costs no hashing.

use baton_completion::{CompletionKind, OperationId, WaitGeneration, WaitId};

/// Where the completion of one registered external wait must go (worker rule W5).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    /// The owner thread's token, or [`MIGRATABLE`](super::waits::MIGRATABLE).
    pub(crate) owner: u64,
    pub(crate) operation_id: OperationId,
    pub(crate) kind: CompletionKind,
}

/// Routes by slot number, each with the wait identity it was registered for. Invariant: `len`
/// counts the occupied places. A slot is handed out again only after its wait left its table,
/// so a route still stored for an older generation can only meet a stale completion: the new
/// registration replaces it.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    places: Vec<Option<(WaitId, WaitGeneration, Route)>>,
    len: usize,
}

impl Routes {
    fn index(id: WaitId) -> usize {
        // A `u32` always fits a `usize` on the 64-bit targets io_uring runs on.
        id.get() as usize
    }

    pub(crate) fn insert(&mut self, id: WaitId, generation: WaitGeneration, route: Route) {
        let index = Self::index(id);
        if index >= self.places.len() {
            self.places.resize_with(index + 1, || None);
        }
        if self.places[index]
            .replace((id, generation, route))
            .is_none()
        {
            self.len += 1;
        }
    }

    /// The route of the wait `(id, generation)`, if that exact wait has one.
    pub(crate) fn get(&self, id: WaitId, generation: WaitGeneration) -> Option<Route> {
        match self.places.get(Self::index(id))? {
            Some((_, stored, route)) if *stored == generation => Some(*route),
            _ => None,
        }
    }

    /// Removes the route of the wait `(id, generation)`; a route of another generation stays.
    pub(crate) fn remove(&mut self, id: WaitId, generation: WaitGeneration) {
        if let Some(place) = self.places.get_mut(Self::index(id))
            && place.is_some_and(|(_, stored, _)| stored == generation)
        {
            *place = None;
            self.len -= 1;
        }
    }

    /// Every stored route with its wait's slot and generation.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (WaitId, WaitGeneration, Route)> + '_ {
        self.places.iter().flatten().copied()
    }

    pub(crate) fn clear(&mut self) {
        self.places.clear();
        self.len = 0;
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}
