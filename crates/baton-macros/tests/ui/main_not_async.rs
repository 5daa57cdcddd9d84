#[baton_macros::main]
fn main() {}
