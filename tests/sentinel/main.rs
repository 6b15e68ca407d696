//! Scenarios with Sentinel (a master, a replica, 3 sentinels from the test kit).

mod s10_the_client_follows_a_sentinel_failover;
