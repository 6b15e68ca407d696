//! The `acquire` span records how an acquisition ended (outcome, wait time in ms, fencing token,
//! script calls); the `release` span its outcome; the `renew` span how many holds it renewed
//! and found gone, for the plain lock, a read-write side and the quorum lock, each with its
//! own module as target. Checked on the span-close lines of a `tracing-subscriber` fmt layer.

use std::time::Duration;

use relock_tests::*;
use tracing_subscriber::fmt::format::FmtSpan;

#[tokio::test]
async fn spans_record_outcome_wait_token_and_attempts() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_span_events(FmtSpan::CLOSE)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    // The only test in this binary, with a global subscriber: tracing caches each callsite's
    // interest process-wide, so thread-local subscribers of tests running in parallel (with
    // other levels) could leave a span disabled.
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    let server = server();
    let (a, b) = (
        client_with_lease(&server, Duration::from_millis(600)).await,
        client(&server).await,
    );

    let g = a.lock("t71").lock().await.unwrap();
    let token = g.fencing_token();
    // Refused for 300 ms: timed out, after more than one script call.
    assert!(b
        .lock("t71")
        .try_lock_for(Duration::from_millis(300))
        .await
        .unwrap()
        .is_none());
    let since = std::time::Instant::now();
    wait_until(Duration::from_secs(2), "a renewal", || async {
        since.elapsed() > Duration::from_millis(300)
    })
    .await
    .unwrap();
    g.unlock().await.unwrap();
    // A read-write side's spans: the same, with its side.
    let rw = a.read_write_lock("t71rw");
    let r = rw.read_lock().lock().await.unwrap();
    let nested = r
        .scope(async { rw.read_lock().lock().await })
        .await
        .unwrap();
    nested.unlock().await.unwrap();
    r.unlock().await.unwrap();
    // A quorum lock's: the same shared acquire, with the quorum's module as target.
    let m = masters(3);
    let q = quorum_client(&m, Duration::from_secs(5), Duration::ZERO).await;
    let qg = q.lock("t71q").lock().await.unwrap();
    let q_token = qg.fencing_token();
    let q_nested = qg
        .scope(async { q.lock("t71q").lock().await })
        .await
        .unwrap();
    q_nested.unlock().await.unwrap();
    qg.unlock().await.unwrap();
    q.shutdown().await;
    a.shutdown().await;
    b.shutdown().await;

    let logs = captured.text();
    let closes: Vec<&str> = logs.lines().filter(|l| l.contains("close")).collect();
    let acquired = closes
        .iter()
        .find(|l| l.contains("acquire{") && l.contains("outcome=\"acquired\""))
        .unwrap_or_else(|| panic!("no acquired span: {logs}"));
    assert!(acquired.contains(&format!("token={token}")), "{acquired}");
    assert!(
        acquired.contains("attempts=1") && acquired.contains("wait_ms="),
        "{acquired}"
    );
    // Each kind's spans have its own module as target, so that a log filter on it (say
    // `relock::exclusive::lock=debug`) shows them (found by review: made in a shared module,
    // they all had that module's target); a plain lock's have no `side`.
    assert!(
        acquired.contains("relock::exclusive::lock:") && !acquired.contains("side"),
        "{acquired}"
    );
    let read = closes
        .iter()
        .find(|l| l.contains("acquire{lock=t71rw"))
        .unwrap_or_else(|| panic!("no read-write acquire span: {logs}"));
    assert!(
        read.contains("side=\"read\"") && read.contains("relock::exclusive::rwlock:"),
        "{read}"
    );
    let reentered = closes
        .iter()
        .find(|l| l.contains("reenter{lock=t71rw"))
        .unwrap_or_else(|| panic!("no read-write reenter span: {logs}"));
    assert!(
        reentered.contains("side=\"read\"") && reentered.contains("relock::exclusive::rwlock:"),
        "{reentered}"
    );
    let quorum = closes
        .iter()
        .find(|l| l.contains("acquire{lock=t71q"))
        .unwrap_or_else(|| panic!("no quorum acquire span: {logs}"));
    assert!(
        quorum.contains("relock::quorum::lock:")
            && quorum.contains("outcome=\"acquired\"")
            && quorum.contains(&format!("token={q_token}"))
            && quorum.contains("attempts=1"),
        "{quorum}"
    );
    assert!(
        closes
            .iter()
            .any(|l| l.contains("reenter{lock=t71q") && l.contains("relock::quorum::lock:")),
        "no quorum reenter span: {logs}"
    );
    let timed_out = closes
        .iter()
        .find(|l| l.contains("acquire{") && l.contains("outcome=\"timed_out\""))
        .unwrap_or_else(|| panic!("no timed-out span: {logs}"));
    assert!(
        !timed_out.contains("attempts=1 ") && timed_out.contains("attempts="),
        "{timed_out}"
    );
    assert!(
        closes
            .iter()
            .any(|l| l.contains("release{") && l.contains("outcome=\"released\"")),
        "{logs}"
    );
    assert!(
        closes
            .iter()
            .any(|l| l.contains("renew{") && l.contains("renewed=1") && l.contains("lost=0")),
        "{logs}"
    );
    assert_nothing_left(&server).await;
    let all: Vec<&RedisServer> = m.servers().iter().collect();
    assert_nothing_left_on(&all).await;
}
