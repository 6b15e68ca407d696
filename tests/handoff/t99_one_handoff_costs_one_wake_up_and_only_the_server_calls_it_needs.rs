//! The cost of one handoff to a parked waiter, counted exactly (issue 25's hop count): a plain
//! handoff is one release call, one message that wakes exactly one waiter, and the waiter's one
//! acquire call; a fair handoff is one release call that grants, and one message that wakes the
//! waiter it names, who needs no call of its own. The task hops inside relock are counted from
//! its handoff steps (TRACE events of `relock::handoff`, each noted with the task it ran in):
//! the steps from the holder's `unlock` to the waiter's guard, in order, and every change of
//! task between two of them apart from the wire's (the release's call to the dispatcher's
//! message, the hop the bare-fred floor has too). Both sides of each task boundary on the path
//! are steps (a coalesced call is sent where `call` is logged; the dispatcher wakes the waiter
//! where `deliver` is), so a hop added between two steps shows as a change of task. A wake-up,
//! a server call or a task hop added back between two steps of either path fails here. What it
//! cannot see: a hop inside a call, between the step that sends it and fred (a call wrapped in
//! a task of its own), which no step of relock's sits in; and fred's own hops (a command to its
//! connection task and the reply back), which the floor has too.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use metrics_util::MetricKind;
use relock_tests::*;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// A handoff step seen, with the task it ran in (`None`: the test's own body).
type Step = (String, Option<tokio::task::Id>);

/// The handoff steps seen.
#[derive(Clone, Default)]
struct Steps(Arc<Mutex<Vec<Step>>>);

impl<S: tracing::Subscriber> Layer<S> for Steps {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "relock::handoff" {
            return;
        }
        struct Step(String);
        impl tracing::field::Visit for Step {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                if field.name() == "step" {
                    self.0 = value.to_string();
                }
            }
            fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
        }
        let mut step = Step(String::new());
        event.record(&mut step);
        self.0.lock().unwrap().push((step.0, tokio::task::try_id()));
    }
}

impl Steps {
    /// The steps from the holder's `unlock` to the waiter's guard (the releaser's own
    /// `release.replied` is off that path), and the task hops between them apart from the
    /// wire's (whatever step sent the release, to `message`).
    fn path(&self) -> (Vec<String>, usize) {
        let seen = std::mem::take(&mut *self.0.lock().unwrap());
        let path: Vec<_> = seen
            .into_iter()
            .filter(|(s, _)| s != "release.replied")
            .collect();
        let hops = path
            .windows(2)
            .filter(|w| w[0].1 != w[1].1 && w[1].0 != "message")
            .count();
        (path.into_iter().map(|(s, _)| s).collect(), hops)
    }
}

fn wakeups(recorder: &DebuggingRecorder) -> (u64, u64) {
    let mut woken = 0;
    let mut wasted = 0;
    for (key, _, _, value) in recorder.snapshotter().snapshot().into_vec() {
        let (kind, key) = key.into_parts();
        if let (MetricKind::Counter, DebugValue::Counter(n)) = (kind, value) {
            match key.name() {
                "relock_wakeups_total" => woken += n,
                "relock_wakeups_wasted_total" => wasted += n,
                _ => {}
            }
        }
    }
    (woken, wasted)
}

async fn quiet_client(server: &relock_testkit::RedisServer) -> relock::Client {
    // No hold watches (their one check per hold would land in the window) and heartbeats far
    // apart: only the handoff's own traffic is counted.
    relock::Client::builder()
        .url(server.url())
        .watch_holds(false)
        .fair_heartbeat(Duration::from_secs(60))
        .build()
        .await
        .unwrap()
}

/// One handoff of `make`'s lock from a holder on one client to a waiter parked on another:
/// (wake-ups, wasted wake-ups, EVALSHA calls on the server) from the release to the waiter's
/// guard.
async fn handoff(
    server: &relock_testkit::RedisServer,
    recorder: &DebuggingRecorder,
    steps: &Steps,
    make: impl Fn(&relock::Client) -> relock::Lock,
) -> ((u64, u64, u64), (Vec<String>, usize)) {
    let (a, b) = (quiet_client(server).await, quiet_client(server).await);
    // Warm both: scripts cached, connections up, subscriptions made once.
    make(&a).lock().await.unwrap().unlock().await.unwrap();
    make(&b).lock().await.unwrap().unlock().await.unwrap();
    let held = make(&a).lock().await.unwrap();
    let waiter = {
        let lock = make(&b);
        tokio::spawn(async move { lock.lock().await })
    };
    wait_until(Duration::from_secs(2), "the waiter to park", || async {
        b.parked_waiters() == 1
    })
    .await
    .unwrap();
    let before = wakeups(recorder);
    server.reset_stats().unwrap();
    steps.0.lock().unwrap().clear();
    held.unlock().await.unwrap();
    let guard = bounded(Duration::from_secs(2), "the handoff", waiter)
        .await
        .unwrap()
        .unwrap();
    let path = steps.path();
    let evalsha = server.command_calls("evalsha").unwrap();
    // No call of another form either (a read-only script, a script sent whole).
    for other in ["evalsha_ro", "eval", "eval_ro"] {
        assert_eq!(server.command_calls(other).unwrap(), 0, "{other}");
    }
    let after = wakeups(recorder);
    guard.unlock().await.unwrap();
    a.shutdown().await;
    b.shutdown().await;
    ((after.0 - before.0, after.1 - before.1, evalsha), path)
}

/// A runtime on this thread only (the test's default): every task's steps come in order.
#[tokio::test(flavor = "current_thread")]
async fn one_handoff_costs_one_wake_up_and_only_the_server_calls_it_needs() {
    let server = server();
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    let steps = Steps::default();
    // Global: the only test in this binary (see `main.rs`).
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(steps.clone()))
        .expect("the only subscriber");

    let (plain, plain_path) = handoff(&server, &recorder, &steps, |c| c.lock("t99:plain")).await;
    assert_eq!(
        plain,
        (1, 0, 2),
        "plain: (wake-ups, wasted, EVALSHA): the release, one wake-up, the waiter's acquire"
    );
    assert_eq!(
        plain_path,
        (
            [
                "unlock",
                "release.begin",
                "release.sent",
                "call",
                "message",
                "deliver",
                "woken",
                "attempt.sent",
                "call",
                "attempt.replied",
                "granted"
            ]
            .map(String::from)
            .to_vec(),
            HOPS
        ),
        "plain: the steps, and the task hops inside relock"
    );
    let (fair, fair_path) = handoff(&server, &recorder, &steps, |c| c.fair_lock("t99:fair")).await;
    assert_eq!(
        fair,
        (1, 0, 1),
        "fair: (wake-ups, wasted, EVALSHA): the release that grants, one wake-up, no call of the waiter's"
    );
    assert_eq!(
        fair_path,
        (
            [
                "unlock",
                "release.begin",
                "release.sent",
                "message",
                "deliver",
                "woken",
                "granted"
            ]
            .map(String::from)
            .to_vec(),
            HOPS
        ),
        "fair: the steps, and the task hops inside relock"
    );
}

/// The task hops inside relock per handoff: the release's own task (the holder's `unlock`
/// hands its release to a task, which must not wait for a caller that may stop polling),
/// and the dispatcher's wake-up of the parked waiter.
const HOPS: usize = 2;
