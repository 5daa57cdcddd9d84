//! Unit tests of the blocking pool (pool rules 1–6).
