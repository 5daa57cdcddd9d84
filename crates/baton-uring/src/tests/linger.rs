//! Tests of `linger.rs` that need no other thread: the token's states and the linger policy
//! (forward rule F8). The races are the loom models' business (`loom_linger.rs`).

use std::time::Duration;

use crate::linger::{Budget, IdleChoice, Linger, LingerPolicy, Token, TokenWas};

#[test]
fn an_unpark_of_a_clear_token_asks_for_the_eventfd_write_and_later_ones_do_not() {
    let token = Token::new();
    assert_eq!(token.unpark(), TokenWas::Clear);
    assert_eq!(token.unpark(), TokenWas::Pending);
    assert!(token.take());
    assert!(!token.take());
}

#[test]
fn a_linger_with_an_unpark_pending_is_answered_at_once() {
    let token = Token::new();
    let _first: TokenWas = token.unpark();
    assert_eq!(token.linger(Budget::of(Duration::from_secs(60)), || false), Linger::Answered);
    assert!(token.take());
}

#[test]
fn a_linger_nobody_answers_expires_and_leaves_the_token_clear() {
    let token = Token::new();
    assert_eq!(token.linger(Budget::of(Duration::from_micros(10)), || false), Linger::Expired);
    assert_eq!(token.unpark(), TokenWas::Clear);
}

#[test]
fn a_linger_that_finds_completions_ends_ready_and_leaves_the_token_clear() {
    let token = Token::new();
    let mut looks = 0;
    let ended = token.linger(Budget::of(Duration::from_secs(60)), || {
        looks += 1;
        looks == 3
    });
    assert_eq!(ended, Linger::Ready);
    assert_eq!(looks, 3, "the linger stops looking once the ring is ready");
    assert_eq!(token.unpark(), TokenWas::Clear, "no longer lingering: the unpark must write");
}

#[test]
fn the_policy_lingers_only_after_a_fresh_delivery() {
    let mut policy = LingerPolicy::default();
    assert_eq!(policy.choose(0), IdleChoice::Block);
    assert_eq!(policy.choose(1), IdleChoice::Linger);
    policy.record(true);
    assert_eq!(policy.choose(1), IdleChoice::Block, "no delivery since the last idle point");
    assert_eq!(policy.choose(2), IdleChoice::Linger);
}

#[test]
fn an_unanswered_linger_stops_lingering_until_a_timed_wait_is_answered_in_time() {
    let mut policy = LingerPolicy::default();
    assert_eq!(policy.choose(1), IdleChoice::Linger);
    policy.record(false);
    assert_eq!(policy.choose(2), IdleChoice::BlockTimed);
    policy.record(false);
    assert_eq!(policy.choose(3), IdleChoice::BlockTimed);
    policy.record(true);
    assert_eq!(policy.choose(4), IdleChoice::Linger);
}
