//! The blocking-pool tests' runtime side (`pool_shutdown`, `pool_stress`): a channel-backed
//! completion inbox and a registrar and wait table wired to it, shared with baton-completion's
//! own tests.

#[path = "../../crates/baton-completion/tests/support/channel.rs"]
mod channel;

pub use channel::{ChannelInbox, ChannelRuntime, PoolRuntime};
