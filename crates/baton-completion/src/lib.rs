//! Completion identities, registrar and dispatch of Baton (SPEC §3). Not yet implemented: see issue 2.
