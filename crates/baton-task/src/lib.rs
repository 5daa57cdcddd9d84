//! The task scheduler of Baton's worker (SPEC §4, "the worker's task loop"). Not yet implemented: see issue 3.
