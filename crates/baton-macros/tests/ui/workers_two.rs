#[baton_macros::main(workers = 2)]
async fn main() {}
