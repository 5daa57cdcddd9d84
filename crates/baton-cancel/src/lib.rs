//! The cancel state machine of Baton (SPEC §2). Not yet implemented: see issue 2.
