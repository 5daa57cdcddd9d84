//! Baton's attribute macros: `#[baton::main]` and `#[baton::test]`, re-exported by
//! the facade under those names (its `macros` feature).
//!
//! They exist so that an application's `main`, or a test, can be an `async fn`: the attribute
//! turns it into a synchronous function that builds a [`baton::Runtime`] and runs the body with
//! `block_on`. The body is the `block_on` root, so it may hold `!Send` values and borrow
//! locals, exactly as a hand-written `rt.block_on(async { ... })` may.
//!
//! [`baton::Runtime`]: https://docs.rs/baton/latest/baton/struct.Runtime.html
//!
//! # Arguments
//!
//! Both attributes take the same optional, comma-separated arguments; each one given calls the
//! `baton::Builder` setter of that name, and the others keep the builder's defaults:
//!
//! | argument | value | builder setter |
//! | --- | --- | --- |
//! | `ring_entries = N` | integer literal, a `u32` ≥ 1 | `Builder::ring_entries` |
//! | `blocking_threads = N` | integer literal, a `usize` ≥ 1 | `Builder::blocking_threads` |
//! | `workers = N` | integer literal, a `usize` ≥ 1 | `Builder::workers` |
//!
//! With `workers = N` the body still runs on worker 0, borrowed by `block_on`, and the other
//! workers run on their own threads: `baton::Handle::current().spawn(..)` places a task on the
//! least-loaded worker, `baton::spawn` on the current one.
//!
//! # What is checked when
//!
//! At compile time, with an error pointing at the offending tokens: the function is an
//! `async fn`, takes no parameters and is not generic; `#[baton::test]` does not also carry
//! `#[test]`; every argument name is known (the message lists the known ones) and given at most
//! once; every value is an integer literal that fits the setter's type and is not zero (no
//! setting accepts zero). At run time, by `Builder::build`: the limits the
//! runtime owns — the ring's maximum size, io_uring being available, locked memory, threads
//! the OS refuses. The macro does not copy those limits; a runtime that cannot be built panics
//! with `#[baton::main] could not build its runtime: <the builder's error>` (for example
//! `... the Baton runtime could not start: ring_entries 40000 exceeds the kernel's maximum of
//! 32768`).
//!
//! # What it generates
//!
//! ```text
//! #[baton::main(ring_entries = 128)]
//! async fn main() -> std::io::Result<()> {
//!     /* body */
//! }
//! ```
//!
//! becomes (the names `body` and `runtime` are hygienic: the body cannot see them)
//!
//! ```text
//! fn main() -> std::io::Result<()> {
//!     let body = async { /* body */ };
//!     // Names the output type, so `?` and `Ok(())` in the body infer it.
//!     let body: ::core::pin::Pin<&mut dyn ::core::future::Future<Output = std::io::Result<()>>> =
//!         ::core::pin::pin!(body);
//!     let runtime = ::baton::Builder::new()
//!         .ring_entries(128)
//!         .build()
//!         .unwrap_or_else(|err| {
//!             ::core::panic!("{} could not build its runtime: {}", "#[baton::main]", err)
//!         });
//!     runtime.block_on(body)
//! }
//! ```
//!
//! `#[baton::test]` generates the same function with `#[::core::prelude::v1::test]` in front
//! of the function's own attributes, so `#[should_panic]`, `#[ignore]` and a return type such as
//! `-> Result<(), E>` work as they do on a plain test. A `return` in the body returns from the
//! body (the `async` block), as it would from the function. The runtime is dropped, which shuts
//! it down, when `block_on` returns.
//!
//! # Reaching `baton`
//!
//! The generated code names the facade as `::baton::Builder`, so it works in any crate that
//! depends on the facade **under the name `baton`** (the usual `baton = { version = "...",
//! features = ["macros"] }`), whatever its own modules are called. A crate that renamed the
//! dependency (`rt = { package = "baton", ... }`) can restore the name at its root with
//! `extern crate rt as baton;`.
//!
//! # Errors
//!
//! Every misuse is reported at once (an unknown argument and a missing `async` give two
//! errors). On error, `#[baton::main]` leaves an empty `fn main() {}` (of the function's name)
//! behind, so rustc does not add "`main` function not found" to the attribute's own message.
//!
//! # How it is tested
//!
//! `tests/compile_fail.rs` runs [trybuild] over `tests/ui/*.rs`: each file is one misuse, and
//! its `.stderr` holds the exact message expected (a non-async `main` and test, an unknown
//! argument, a missing, string, negative, zero or out-of-range value, a repeated argument, a
//! function with parameters, a generic function, `workers = 0`, a second `#[test]`, an
//! attribute on a struct, two mistakes reported together). The macros used for real are
//! tested through the facade: its doc examples, its
//! `examples/main_macro.rs`, and the workspace test `tests/tests/e2e_macros.rs` (tests that do
//! file and socket I/O, take arguments, return `Result`, carry `#[should_panic]`, and a
//! `#[baton::main]` function whose runtime cannot be built, a `workers = 2` test whose tasks
//! run on both workers).
//!
//! [trybuild]: https://docs.rs/trybuild

mod args;
mod expand;

use proc_macro::TokenStream;

use crate::expand::{Entry, expand};

/// Runs an `async fn main` (or any `async fn` without parameters) on a new Baton runtime:
/// `#[baton::main]`, `#[baton::main(ring_entries = 128, blocking_threads = 4)]`.
///
/// See the [crate documentation](crate) for the arguments, what is checked at compile time and
/// at run time, and the expansion.
///
/// # Panics
///
/// The generated function panics when the runtime cannot be built (a setting out of the
/// runtime's range, io_uring unavailable), with the builder's error in the message.
#[proc_macro_attribute]
pub fn main(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Entry::Main, attr.into(), item.into()).into()
}

/// Runs an `async fn` test on a new Baton runtime, and marks it `#[test]`:
/// `#[baton::test]`, `#[baton::test(ring_entries = 8)]`. Works with `#[should_panic]`,
/// `#[ignore]` and return types such as `-> std::io::Result<()>`.
///
/// See the [crate documentation](crate) for the arguments, what is checked when, and the
/// expansion.
#[proc_macro_attribute]
pub fn test(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Entry::Test, attr.into(), item.into()).into()
}
