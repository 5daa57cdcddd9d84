#[baton_macros::test(blocking_threads = 0)]
async fn runs() {}

fn main() {}
