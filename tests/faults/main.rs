//! Scenarios with network faults between a client and Redis (the test kit's `FaultProxy`):
//! delayed, frozen, dropped and reset connections must never let a late step of one hold
//! affect another hold. One scenario per file.

mod support;

mod x10_a_delayed_final_release_cannot_end_the_same_tasks_next_hold;
mod x20_the_clean_up_of_an_acquire_whose_reply_was_lost_cannot_end_a_retried_grant;
mod x30_drop_then_lock_again_at_once_under_delay_freeze_and_reset_never_overlaps;
mod x40_a_failed_unlock_is_not_adopted_by_the_next_lock;
mod x50_a_waiter_whose_subscription_lands_late_still_wakes_on_the_release;
mod x60_a_quorum_waiter_whose_subscriptions_land_late_still_wakes_on_the_release;
