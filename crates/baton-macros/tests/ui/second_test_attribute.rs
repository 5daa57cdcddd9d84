#[baton_macros::test]
#[test]
async fn twice() {}

fn main() {}
