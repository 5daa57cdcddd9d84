//! The current-thread `block_on` loan driver of Baton (SPEC §5). Not yet implemented: see issue 4.
