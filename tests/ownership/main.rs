//! Scenarios about who holds a lock: futures of one task exclude each other, re-entry is
//! explicit (scopes, owners, the opt-in per-task mode), leases are never shortened, and
//! `lost()` is never late. One scenario per file.

mod support;

mod o10_futures_of_one_task_exclude_each_other;
mod o20_successive_block_on_bodies_on_one_thread_exclude_each_other;
mod o30_nested_calls_reenter_inside_a_scope_and_with_releases_before_it_returns;
mod o40_per_task_reentry_is_opt_in;
mod o50_a_lock_waiting_on_its_own_tasks_hold_warns_once_and_stays_bounded;
mod o60_a_renewal_never_shortens_a_longer_fixed_lease_reentry;
mod o70_lost_fires_no_later_than_valid_until;
mod o80_a_guard_dropped_off_the_runtime_releases_through_it_and_is_forgotten_only_when_that_runtime_is_gone;
