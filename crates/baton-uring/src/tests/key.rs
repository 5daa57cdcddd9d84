//! Tests of `key.rs`.

use crate::key::*;

#[test]
fn user_data_round_trips_every_tag() {
    let key = RequestKey {
        index: u32::MAX,
        generation: GENERATION_MASK,
    };
    assert_eq!(decode(key.user_data()), Tagged::Request(key));
    assert_eq!(decode(key.cancel_user_data()), Tagged::Cancel(key));
    assert_eq!(decode(RequestKey::WAKE_USER_DATA), Tagged::Wake);
}
