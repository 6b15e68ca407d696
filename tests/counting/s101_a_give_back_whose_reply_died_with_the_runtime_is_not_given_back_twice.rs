//! A dropped guard's give-back that reached the server but whose reply was still on its way
//! when the runtime ended is not sent again as a new give-back at exit: the exit's copy carries
//! the same request id and adds nothing. A semaphore of 3 stays at 3, not 4.

use std::time::Duration;

use relock_testkit::{Direction, FaultProxy};
use relock_tests::*;

#[test]
fn a_give_back_whose_reply_died_with_the_runtime_is_not_given_back_twice() {
    let server = server();
    let proxy = FaultProxy::start(&server.addr()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = relock::Client::builder()
            .url(proxy.url())
            .connect_timeout(Duration::from_secs(1))
            .command_timeout(Duration::from_secs(2))
            .build()
            .await
            .unwrap();
        let sem = c.semaphore("s101");
        assert!(sem.try_set_permits(3).await.unwrap());
        // Once first, so that the script is cached (a NOSCRIPT reply would be held too).
        sem.acquire(1).await.unwrap().release().await.unwrap();
        let permits = sem.acquire(1).await.unwrap();
        proxy.freeze_existing(Direction::Down);
        drop(permits);
        wait_until(Duration::from_secs(3), "the give-back to land", || async {
            server.cmd(&["GET", "s101"]).unwrap().as_string().as_deref() == Some("3")
        })
        .await
        .unwrap();
        // The runtime ends with the reply still held: the give-back is re-sent at exit.
    });
    drop(rt);
    assert_eq!(
        server.cmd(&["GET", "s101"]).unwrap().as_string().as_deref(),
        Some("3"),
        "given back twice"
    );
}
