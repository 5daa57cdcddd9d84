#[baton_macros::main(ring_entries = 64, ring_entries = 128)]
async fn main() {}
