#[baton_macros::main(ring_entries = 0)]
async fn main() {}
