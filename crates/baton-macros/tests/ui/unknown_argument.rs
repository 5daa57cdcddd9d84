#[baton_macros::main(ring_size = 64)]
async fn main() {}
