#[baton_macros::main(ring_entries = 5_000_000_000)]
async fn main() {}
