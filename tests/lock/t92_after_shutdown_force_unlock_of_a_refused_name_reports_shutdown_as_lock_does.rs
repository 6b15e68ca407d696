//! Once a client has shut down, `force_unlock` reports `Shutdown` before it looks at the name,
//! as `lock()` of the same handle does: the plain, fair and read-write locks alike (found by
//! review: the shared force-unlock checked the name first).

use relock_tests::*;

#[tokio::test]
async fn after_shutdown_force_unlock_of_a_refused_name_reports_shutdown_as_lock_does() {
    let server = server();
    let c = client(&server).await;
    c.shutdown().await;
    let r = c.lock("").lock().await.map(|_| ());
    assert!(matches!(r, Err(relock::Error::Shutdown)), "lock(): {r:?}");
    let plain = c.lock("").force_unlock().await;
    let fair = c.fair_lock("").force_unlock().await;
    let write = c.read_write_lock("").write_lock().force_unlock().await;
    let read = c.read_write_lock("").read_lock().force_unlock().await;
    for (kind, r) in [
        ("plain", plain),
        ("fair", fair),
        ("write side", write),
        ("read side", read),
    ] {
        assert!(
            matches!(r, Err(relock::Error::Shutdown)),
            "{kind} force_unlock after shutdown: {r:?}"
        );
    }
}
