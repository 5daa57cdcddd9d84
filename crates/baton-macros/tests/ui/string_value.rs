#[baton_macros::main(ring_entries = "x")]
async fn main() {}
