//! Scenarios with Sentinel (a master, a replica, 3 sentinels from the test kit).

mod s10_the_client_follows_a_sentinel_failover;
mod s20_an_acl_user_locks_through_sentinel_across_a_failover_and_a_wrong_password_is_refused_unshown;
