//! The bytes a guarded write holds while it is on its way: beside the caller's `Commands`, a
//! batch with one large value costs the script's argument list and fred's encoding of it
//! (twice the value), and no third copy: a script call that copies its keys and arguments
//! into one buffer must not keep the strings it copied from alive while the call is in
//! flight, or every large write holds its words once more until its reply comes.

use relock::Commands;
use relock_tests::*;

/// The value's size.
const N: usize = 32 * 1024 * 1024;

/// The most bytes the write may hold at once beyond what was live before it, in values: 2.00
/// measured when the call keeps one copy of its words, 3.00 when it keeps two.
const MOST: f64 = 2.5;

#[tokio::test]
async fn a_large_guarded_write_holds_no_extra_copy_of_its_words_while_it_is_sent() {
    let _one = crate::ONE_AT_A_TIME.lock().await;
    let server = server();
    let c = client(&server).await;
    let guard = c.lock("h30").lock().await.unwrap();
    // Warm up: the script is cached and the connection's buffers have grown once.
    for _ in 0..2 {
        let batch = Commands::new().cmd("SET").key("{h30}:v").arg("x".repeat(N));
        guard.write(batch).await.unwrap();
    }
    let batch = Commands::new().cmd("SET").key("{h30}:v").arg("y".repeat(N));
    crate::reset_peak_bytes();
    let before = crate::live_bytes();
    guard.write(batch).await.unwrap();
    let extra = (crate::peak_bytes() - before) as f64 / N as f64;
    println!("h30: peak above what was live before the write: {extra:.2} x the value");
    let v = server.cmd(&["STRLEN", "{h30}:v"]).unwrap().as_int();
    assert_eq!(v, Some(N as i64));
    guard.unlock().await.unwrap();
    server.cmd(&["DEL", "{h30}:v"]).unwrap();
    assert!(
        extra <= MOST,
        "a guarded write of {N} bytes held {extra:.2} x its value at its peak; at most {MOST}"
    );
    assert_nothing_left(&server).await;
}
