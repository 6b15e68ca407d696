//! Scenarios on a Redis Cluster (3 masters + 3 replicas from the test kit), one per file, each
//! named as a sentence.

mod c10_plain_and_fair_locks_on_a_hundred_names_across_three_masters_count_exactly;
mod c20_a_graceful_failover_keeps_holders_and_waiters_working;
mod c30_a_lock_lost_in_a_failover_fires_lost_and_tokens_still_rise;
mod c40_a_cluster_url_with_no_reachable_node_fails_fast_naming_the_nodes;
mod c50_sync_replicas_refuses_a_lock_no_replica_acknowledged;
mod c60_renewals_and_heartbeats_are_batched_per_slot;
