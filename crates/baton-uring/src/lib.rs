//! The io_uring worker driver of Baton (SPEC §4). Not yet implemented: see issue 3.
