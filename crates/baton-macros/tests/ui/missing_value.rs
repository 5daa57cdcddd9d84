#[baton_macros::test(blocking_threads)]
async fn runs() {}

fn main() {}
