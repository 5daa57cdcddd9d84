//! Compile-fail tests of `#[baton::main]` and `#[baton::test]`: each `ui/*.rs` file is one
//! misuse, and the `.stderr` beside it is the exact message rustc must print (regenerate with
//! `TRYBUILD=overwrite cargo test -p baton-macros --test compile_fail`, then read the diff).

#[test]
fn misuse_fails_to_compile_with_the_expected_message() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
