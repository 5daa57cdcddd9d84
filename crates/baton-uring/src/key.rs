//! Request identities: slab keys with generations, packed into io_uring `user_data`.

/// The identity of one request in the driver's slab.
///
/// Bit layout of the packed io_uring `user_data`:
///
/// ```text
///  63 62 | 61 ........... 32 | 31 ............. 0
///   tag  | generation (30b) |   slab index (32b)
/// ```
///
/// Tag `00` is a request, `01` the async cancel aimed at that request, `10` the driver's wake-up
/// read. A slot's generation is bumped every time the slot is reused, so a stale key (held by a
/// late message or a late CQE) never matches the new occupant. Generations wrap after 2^30
/// reuses of one slot; a stale key would need to stay alive that long to alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestKey {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

pub(crate) const GENERATION_MASK: u32 = (1 << 30) - 1;
const TAG_SHIFT: u32 = 62;
const TAG_CANCEL: u64 = 1 << TAG_SHIFT;
const TAG_WAKE: u64 = 2 << TAG_SHIFT;

/// What a completion's `user_data` refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tagged {
    /// The final completion of a request.
    Request(RequestKey),
    /// The completion of the async cancel aimed at a request.
    Cancel(RequestKey),
    /// The driver's own wake-up read.
    Wake,
}

impl RequestKey {
    /// The slab index.
    pub fn index(self) -> u32 {
        self.index
    }

    /// The generation of the slot when this key was issued.
    pub fn generation(self) -> u32 {
        self.generation
    }

    fn body(self) -> u64 {
        (u64::from(self.generation & GENERATION_MASK) << 32) | u64::from(self.index)
    }

    /// The `user_data` of this request's SQE.
    pub(crate) fn user_data(self) -> u64 {
        self.body()
    }

    /// The `user_data` of the async cancel aimed at this request.
    pub(crate) fn cancel_user_data(self) -> u64 {
        self.body() | TAG_CANCEL
    }

    /// The `user_data` of the driver's wake-up read.
    pub(crate) const WAKE_USER_DATA: u64 = TAG_WAKE;
}

/// Decodes a completion's `user_data`.
pub(crate) fn decode(user_data: u64) -> Tagged {
    let key = RequestKey {
        index: user_data as u32,
        generation: ((user_data >> 32) as u32) & GENERATION_MASK,
    };
    match user_data >> TAG_SHIFT {
        0 => Tagged::Request(key),
        1 => Tagged::Cancel(key),
        _ => Tagged::Wake,
    }
}
