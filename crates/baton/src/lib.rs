//! Baton, the facade crate (SPEC §6). Not yet implemented: see issue 5.
