#[baton_macros::main(threads = 4)]
fn main() {}
