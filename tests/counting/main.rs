//! Scenarios for the counting kinds (`crates/relock/src/counting`): the semaphore (`s*`), the
//! permit-expirable semaphore (`p*`), the count-down latch (`l*`) and the rate limiter (`rl*`),
//! on real redis-servers, one per file, each named as a sentence.

mod l10_waiters_on_two_clients_open_when_the_count_reaches_zero;
mod l20_wait_for_times_out_and_try_set_count_sets_only_if_absent;
mod l30_a_latch_deleted_without_a_message_still_opens_a_waiter_within_a_second;
mod l40_dropped_waits_leave_no_subscription;
mod l50_one_count_down_on_a_client_built_on_a_resending_fred_pool_never_counts_twice;
mod p10_two_clients_with_sixteen_tasks_each_never_hold_more_than_three_permits;
mod p20_a_holder_that_stops_renewing_gives_its_permit_back_when_its_lease_ends;
mod p30_the_watchdog_keeps_a_permit_past_three_leases_and_lost_fires_when_its_id_is_deleted;
mod p40_a_waiter_is_woken_promptly_by_a_release_and_within_its_bound_by_an_expiry;
mod p50_dropped_acquires_leave_every_permit_available_and_no_subscription;
mod p60_bad_input_and_keys_of_another_type_get_typed_errors;
mod p70_permits_written_as_redisson_writes_them_are_shared_with_relock;
mod p80_permits_on_three_cluster_masters_are_renewed_and_wake_waiters;
mod p90_shutdown_gives_back_every_permit_its_guards_hold;
mod p91_a_permit_acquire_whose_reply_is_lost_on_a_resending_fred_pool_takes_one_permit;
mod p92_permits_with_ids_are_neither_created_nor_destroyed_while_connections_are_killed;
mod p93_a_permit_released_elsewhere_is_reported_lost_even_when_its_release_meets_a_killed_connection;
mod p94_a_permit_acquire_that_lands_after_its_give_back_takes_nothing;
mod p95_a_permit_acquire_cut_off_during_shutdown_gives_back_the_permit_it_took;
mod p96_a_permit_released_by_id_elsewhere_is_reported_lost_at_once_and_others_releases_are_not_a_loss;
mod p97_a_failed_give_back_at_shutdown_names_its_semaphore_and_an_error_reply_is_not_retried;
mod rl101_an_acquire_resent_by_a_fred_pool_after_its_reply_is_lost_takes_its_permits_once;
mod rl102_a_per_client_acquire_reads_all_its_records_only_after_its_rate_changed;
mod rl103_a_per_client_limit_gets_its_whole_rate_back_after_its_records_expire_once_another_client_dropped_the_keep_alive;
mod rl104_a_refused_acquire_writes_nothing_but_expiries;
mod rl105_a_per_client_rate_lowered_below_what_the_client_holds_binds_until_its_records_in_the_window_fit;
mod rl106_a_release_under_a_per_client_rate_lowered_below_what_the_client_holds_grants_nothing_past_the_rate;
mod rl107_a_per_client_limits_state_keys_keep_or_lack_a_ttl_together_once_another_client_dropped_the_keep_alive;
mod rl108_a_redisson_acquire_after_a_relock_refusal_and_a_grant_under_a_keep_alive_gets_no_script_error;
mod rl109_a_config_with_values_a_limiter_never_writes_is_refused_and_nothing_is_granted;
mod rl10_a_limit_of_r_gives_exactly_r_of_more_immediate_acquires_across_two_clients;
mod rl110_application_data_at_a_limiters_state_keys_is_refused_and_left_as_it_was;
mod rl20_permits_come_back_after_the_interval_and_waits_sleep_until_the_oldest_record_expires;
mod rl30_try_set_rate_sets_only_if_absent_set_rate_starts_afresh_and_keep_alive_expires_the_keys;
mod rl40_per_client_limits_give_each_client_the_whole_rate_under_its_own_keys;
mod rl50_bad_input_uninitialised_limiters_and_keys_of_another_type_get_typed_errors_and_write_nothing;
mod rl60_records_are_scored_by_the_servers_clock_and_no_call_sends_a_time;
mod rl70_a_limit_is_shared_exactly_with_redissons_own_scripts_both_ways;
mod rl80_a_limiter_works_on_three_cluster_masters_with_its_keys_in_one_slot;
mod rl90_a_per_client_value_above_a_rate_lowered_by_another_client_grants_only_the_new_rate;
mod rl91_set_rate_without_a_keep_alive_after_one_with_a_keep_alive_keeps_the_limiter;
mod rl92_a_waiter_on_a_limiter_whose_keep_alive_is_its_interval_is_not_told_rate_not_set;
mod rl93_delete_refuses_a_name_holding_a_lock_and_leaves_the_lock_held;
mod rl94_one_release_on_a_resending_fred_pool_never_gives_back_twice;
mod rl95_a_waiting_acquire_whose_attempt_loses_its_connection_keeps_waiting;
mod rl96_a_per_client_limit_keeps_its_records_for_their_interval_after_another_client_drops_the_keep_alive;
mod rl97_a_per_client_rate_changed_by_another_client_binds_its_window_at_once_whether_lowered_or_raised;
mod rl98_a_per_client_limit_whose_config_has_a_ttl_but_no_keep_alive_keeps_its_records_for_their_interval;
mod rl99_a_release_after_the_oldest_grants_interval_ended_gives_the_permits_back;
mod s100_semaphore_permits_dropped_as_main_returns_come_back;
mod s101_a_give_back_whose_reply_died_with_the_runtime_is_not_given_back_twice;
mod s102_an_acquire_dropped_on_a_thread_without_a_runtime_gives_back_the_permit_its_attempt_took;
mod s103_an_acquire_dropped_inside_a_runtime_that_then_ends_gives_back_the_permit_its_attempt_took;
mod s10_two_clients_with_sixteen_tasks_each_never_use_more_than_three_permits;
mod s15_a_permit_guard_gives_its_permits_back_on_drop_error_panic_and_shutdown_and_forget_keeps_them;
mod s16_permits_given_back_by_shutdown_are_never_given_back_twice_and_a_lost_give_back_is_reported;
mod s20_try_acquire_for_gives_up_within_its_bound;
mod s30_a_release_of_k_permits_wakes_k_waiters_promptly_not_all_of_them;
mod s35_a_release_of_one_reaches_a_waiter_for_one_behind_waiters_for_two;
mod s40_a_release_without_a_message_still_reaches_a_waiter_within_a_second;
mod s45_a_waiter_survives_its_connections_being_killed;
mod s50_dropped_acquires_leave_the_permit_count_exact_and_no_subscription;
mod s60_drain_add_and_try_set_permits_leave_exact_counts_and_keys;
mod s70_bad_input_and_keys_of_another_type_get_typed_errors;
mod s80_semaphores_and_latches_wake_waiters_across_three_cluster_masters;
mod s85_redisson_messages_written_by_hand_wake_relock_waiters;
mod s90_shutdown_ends_semaphore_and_latch_waits_with_shutdown;
mod s91_a_release_and_a_lock_survive_a_short_out_of_memory;
mod s92_an_acquire_cut_off_during_shutdown_gives_back_the_permit_it_took;
mod s93_a_give_back_at_shutdown_whose_connection_is_refused_for_a_while_is_sent_again_until_it_lands;
mod s94_an_acquire_whose_reply_was_lost_before_shutdown_gets_its_permit_back_whether_retrying_or_unpolled;
mod s95_an_acquire_whose_first_reply_is_lost_and_that_then_succeeds_takes_only_its_own_permits;
mod s96_an_acquire_attempt_that_lands_after_its_retry_succeeded_takes_nothing_more;
mod s97_a_drain_on_a_resending_fred_pool_returns_every_permit_it_took;
mod s98_permits_are_neither_created_nor_destroyed_while_connections_are_killed;
mod s99_an_acquire_that_gives_up_or_is_dropped_while_its_reply_is_held_gives_back_the_permit_it_took;

use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use relock::fred;
use relock_testkit::FaultProxy;
use relock_tests::RedisServer;

/// `relock_wakeups_total` since the last call: a snapshot of the debugging recorder resets its
/// counters.
pub(crate) fn wakeups(recorder: &DebuggingRecorder) -> u64 {
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .find(|(key, _, _, _)| key.key().name() == "relock_wakeups_total")
        .map_or(0, |(_, _, _, v)| match v {
            DebugValue::Counter(n) => n,
            other => panic!("{other:?}"),
        })
}

/// A relock client built on an application's fred pool behind `proxy` that resends a command
/// after a reconnect (fred's default `max_command_attempts`, 3), with a reconnect policy and a
/// command timeout, as `ClientBuilder::build_with_pool`'s documentation allows; and the pool.
pub(crate) async fn resending_pool_client(
    proxy: &FaultProxy,
) -> (fred::clients::Pool, relock::Client) {
    use fred::interfaces::ClientLike;
    let config = fred::types::config::Config::from_url(&proxy.url()).unwrap();
    let pool = fred::types::Builder::from_config(config)
        .set_policy(fred::types::config::ReconnectPolicy::new_constant(0, 50))
        .with_performance_config(|p| p.default_command_timeout = Duration::from_secs(3))
        .build_pool(1)
        .unwrap();
    pool.init().await.unwrap();
    let client = relock::Client::builder()
        .command_timeout(Duration::from_secs(3))
        .build_with_pool(pool.clone())
        .await
        .expect("a client on the pool");
    (pool, client)
}

/// A semaphore `name` of one permit on a client behind a proxy (command timeout 3 s: shutdown
/// waits about that long for a give-back, a reconnect then the script, well above what a
/// loaded machine stalls it by), taken and released once so that its connections are up, and
/// the existing connections' replies held (returned: lose them with `lose_replies`).
pub(crate) async fn one_permit_behind_a_proxy(
    server: &RedisServer,
    name: &str,
) -> (
    FaultProxy,
    relock::Client,
    relock::Semaphore,
    Vec<relock_testkit::ConnId>,
) {
    use relock_tests::{client_behind_proxy, taken};
    let (proxy, c) = client_behind_proxy(server, Duration::from_secs(3)).await;
    let sem = c.semaphore(name);
    assert!(sem.try_set_permits(1).await.unwrap());
    assert!(sem.try_acquire(1).await.map(taken).unwrap());
    sem.release(1).await.unwrap();
    let frozen = proxy.freeze_existing(relock_testkit::Direction::Down);
    (proxy, c, sem, frozen)
}

/// Waits (bounded) until an attempt has taken the one permit of `name`.
pub(crate) async fn permit_taken(server: &RedisServer, name: &str) {
    relock_tests::wait_until(
        Duration::from_secs(3),
        "the attempt to take the permit",
        || async { get(server, name).as_deref() == Some("0") },
    )
    .await
    .unwrap();
}

/// `GET key` on the server, as text (None: no key).
pub(crate) fn get(server: &RedisServer, key: &str) -> Option<String> {
    server.cmd(&["GET", key]).unwrap().as_string()
}

/// Waits (bounded) until the server's keys, sorted, are `expected`: the request keys of
/// releases and count-downs (which make them take effect once) are deleted in the background
/// once their replies are in.
pub(crate) async fn keys_become(server: &RedisServer, expected: &[&str]) {
    let sorted = || {
        let mut k = server.keys().unwrap();
        k.sort();
        k
    };
    let _ = relock_tests::wait_until(std::time::Duration::from_secs(3), "the keys", || async {
        sorted() == expected
    })
    .await;
    assert_eq!(sorted(), expected);
}

/// Waits (bounded) until none of `clients` has a subscription left: a waiter's subscription
/// is released in the background once it returns.
pub(crate) async fn no_subscriptions(clients: &[&relock::Client]) {
    relock_tests::wait_until(
        std::time::Duration::from_secs(3),
        "every subscription released",
        || async { clients.iter().all(|c| c.subscribed_channels() == 0) },
    )
    .await
    .unwrap_or_else(|e| {
        let left: Vec<usize> = clients.iter().map(|c| c.subscribed_channels()).collect();
        panic!("{e}: {left:?}")
    });
}

/// Gives back what one turn of [`conservation_under_kills`] took.
pub(crate) type GiveBack =
    std::pin::Pin<Box<dyn std::future::Future<Output = relock::Result<()>> + Send>>;

/// A conservation run: two clients (`a`, `b`) of six tasks each take one of four permits of `name` with
/// `take` (`None`: none free within its wait), work for 0–2 ms and give it back, over and over
/// for 5 s, while every command connection is killed (CLIENT KILL) every 150 ms. Then asserts
/// that the run did something (more than 10 connections killed, more than 50 permits taken),
/// that no call failed, that every permit taken was given back, that no more than 4 were held
/// at once and that `available` finds all 4; shuts the clients down and checks that only
/// request keys with a TTL are left besides `name`'s own keys.
pub(crate) async fn conservation_under_kills<T, TF, A, AF>(
    server: &RedisServer,
    [a, b]: [relock::Client; 2],
    name: &str,
    own_keys: &[&str],
    take: T,
    available: A,
) where
    T: Fn(relock::Client) -> TF + Clone + Send + 'static,
    TF: std::future::Future<Output = relock::Result<Option<GiveBack>>> + Send,
    A: FnOnce(relock::Client) -> AF,
    AF: std::future::Future<Output = relock::Result<u64>>,
{
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    let (taken, given, held, most) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let until = Instant::now() + Duration::from_secs(5);
    let mut tasks = Vec::new();
    for c in [&a, &b] {
        for _ in 0..6 {
            let (c, take, failures) = (c.clone(), take.clone(), failures.clone());
            let (taken, given, held, most) =
                (taken.clone(), given.clone(), held.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                while Instant::now() < until {
                    let give_back = match take(c.clone()).await {
                        Ok(Some(g)) => g,
                        Ok(None) => continue,
                        Err(e) => {
                            failures.lock().unwrap().push(format!("take: {e}"));
                            continue;
                        }
                    };
                    let n = taken.fetch_add(1, Ordering::SeqCst);
                    most.fetch_max(held.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(n % 3)).await;
                    held.fetch_sub(1, Ordering::SeqCst);
                    match give_back.await {
                        Ok(()) => {
                            given.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(e) => failures.lock().unwrap().push(format!("give back: {e}")),
                    }
                }
            }));
        }
    }
    let mut kills = 0;
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(150)).await;
        kills += server.client_kill_type("normal").unwrap();
    }
    for t in tasks {
        relock_tests::bounded(Duration::from_secs(20), "a task to finish", t)
            .await
            .unwrap();
    }
    let failures = failures.lock().unwrap().clone();
    let left = available(a.clone()).await.unwrap();
    let (taken, given) = (taken.load(Ordering::SeqCst), given.load(Ordering::SeqCst));
    assert!(kills > 10, "only {kills} connections killed");
    assert!(taken > 50, "only {taken} permits taken");
    assert!(
        failures.is_empty(),
        "{} calls failed: {failures:?}",
        failures.len()
    );
    assert_eq!(taken, given);
    assert!(
        most.load(Ordering::SeqCst) <= 4,
        "more than 4 permits held at once"
    );
    assert_eq!(
        left, 4,
        "{taken} taken and given back, {kills} connections killed"
    );
    a.shutdown().await;
    b.shutdown().await;
    for key in own_keys {
        server.cmd(&["DEL", key]).unwrap();
    }
    // Request keys of calls cut off with their connection expire by themselves.
    only_expiring_request_keys_left(server, name).await;
}

/// Asserts that the only keys left are request keys of `name`, each with a TTL (a key listed
/// and then gone was deleted in the background: its call's reply had come in), deletes them,
/// and asserts that nothing else is left. Returns how many there were.
pub(crate) async fn only_expiring_request_keys_left(server: &RedisServer, name: &str) -> usize {
    let prefix = format!("relock_request:{{{name}}}:");
    let left = server.keys().unwrap();
    for key in &left {
        assert!(key.starts_with(&prefix), "{key} left");
        let ttl = server.cmd(&["PTTL", key]).unwrap().as_int().unwrap();
        assert!(
            ttl == -2 || (ttl > 0 && ttl <= 1_200_000),
            "{key}: PTTL {ttl}"
        );
        server.cmd(&["DEL", key]).unwrap();
    }
    relock_tests::assert_nothing_left(server).await;
    left.len()
}
