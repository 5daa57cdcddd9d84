#[baton_macros::main(blocking_threads = -1)]
async fn main() {}
