//! Unit tests of decoders (crate rule E3).

use crate::completion::Payload;
use crate::prepared::{DecodeError, Decoder};
use std::any::Any;

#[test]
fn identity_hands_the_payload_box_on_without_reallocating() {
    let payload: Payload = Box::new(7_u64);
    let address = std::ptr::from_ref::<dyn Any + Send>(&*payload).cast::<u8>();
    let mut decoder = Decoder::<u64>::identity().erase();
    let value = decoder.decode(payload).expect("a u64 payload");
    assert_eq!(std::ptr::from_ref::<dyn Any>(&*value).cast::<u8>(), address);
    assert_eq!(value.downcast_ref::<u64>(), Some(&7));
}

#[test]
fn identity_and_mapping_decoders_refuse_a_payload_of_another_type() {
    let wrong = || Box::new("not a number") as Payload;
    for mut decoder in [
        Decoder::<u64>::identity().erase(),
        Decoder::<u64>::new(|n| n + 1).erase(),
    ] {
        match decoder.decode(wrong()) {
            Err(DecodeError::PayloadType { expected }) => assert_eq!(expected, "u64"),
            other => panic!("expected a payload type error, got {other:?}"),
        }
    }
}

#[test]
fn mapping_decoder_runs_its_function() {
    let mut decoder = Decoder::<u64>::new(|n| n * 3).erase();
    let value = decoder.decode(Box::new(5_u64)).expect("a u64 payload");
    assert_eq!(value.downcast_ref::<u64>(), Some(&15));
}
