#[baton_macros::main]
struct NotAFunction;

fn main() {}
