#[baton_macros::test(workers = 0)]
async fn no_workers() {}

fn main() {}
