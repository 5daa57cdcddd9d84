//! Unit tests of `Compat` over real sockets on a Baton runtime.
