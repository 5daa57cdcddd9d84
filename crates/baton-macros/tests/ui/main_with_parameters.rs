#[baton_macros::main]
async fn main(x: u32) {
    let _ = x;
}
