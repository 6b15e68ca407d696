//! Operators see a read-write lock: `status` reports its mode (`write`, then `read` after a
//! downgrade), every holder with its count and layout, and its lease; free, it reports no
//! holder and no mode.

use relock::OwnerLayout;
use relock_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_a_read_write_locks_mode_and_every_holder() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let rw = a.read_write_lock("r96");
    let write = rw.write_lock().lock().await.unwrap();
    let s = rw.status().await.unwrap();
    assert_eq!(s.mode.as_deref(), Some("write"));
    assert_eq!(s.holders.len(), 1);
    assert_eq!(s.holders[0].field, write.owner());
    assert!(s.holders[0].field.ends_with(":write"));
    assert_eq!(s.holders[0].layout, OwnerLayout::Relock);
    assert!(s.pttl_ms.is_some_and(|p| p > 0));
    let read = write.scope(rw.read_lock().lock()).await.unwrap();
    write.unlock().await.unwrap();
    let other = b.read_write_lock("r96").read_lock().lock().await.unwrap();
    let s = b.read_write_lock("r96").status().await.unwrap();
    assert_eq!(s.mode.as_deref(), Some("read"));
    let mut fields: Vec<(String, i64)> = s
        .holders
        .iter()
        .map(|h| (h.field.clone(), h.count))
        .collect();
    fields.sort();
    let mut expected = vec![
        (read.owner().to_string(), 1),
        (other.owner().to_string(), 1),
    ];
    expected.sort();
    assert_eq!(fields, expected);
    read.unlock().await.unwrap();
    other.unlock().await.unwrap();
    let s = rw.status().await.unwrap();
    assert!(!s.is_held() && s.mode.is_none(), "{s:?}");
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}
