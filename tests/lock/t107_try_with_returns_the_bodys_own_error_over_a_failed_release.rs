//! `try_with` gives one `Result<T, E>`: the body's value, the lock's error converted into `E`,
//! or the body's own error, which wins over a release that failed too (the body's failed
//! database write must not be reported as a lost lock). A body that succeeded while its hold
//! was lost still reports the loss.

use relock::Error;
use relock_tests::*;

#[derive(Debug)]
enum AppError {
    Lock(Error),
    Db(&'static str),
}

impl From<Error> for AppError {
    fn from(e: Error) -> Self {
        AppError::Lock(e)
    }
}

async fn write_db(fail: bool) -> Result<u64, AppError> {
    if fail {
        Err(AppError::Db("the database write failed"))
    } else {
        Ok(1)
    }
}

#[tokio::test]
async fn try_with_returns_the_bodys_own_error_over_a_failed_release() {
    let server = server();
    let (a, b) = (client(&server).await, client(&server).await);
    let lock = a.lock("t107");

    let r: Result<u64, AppError> = lock
        .try_with(async |_g| {
            let n = write_db(false).await?;
            Ok(n)
        })
        .await;
    assert!(matches!(r, Ok(1)), "{r:?}");

    // The body fails, and its hold was force-unlocked meanwhile: the body's error wins.
    let r: Result<u64, AppError> = lock
        .try_with(async |_g| {
            assert!(b.lock("t107").force_unlock().await.unwrap());
            write_db(true).await
        })
        .await;
    match r {
        Err(AppError::Db(what)) => assert_eq!(what, "the database write failed"),
        other => panic!("expected the body's error, got {other:?}"),
    }

    // The body succeeds while its hold is lost: the loss is reported.
    let r: Result<u64, AppError> = lock
        .try_with(async |_g| {
            assert!(b.lock("t107").force_unlock().await.unwrap());
            write_db(false).await
        })
        .await;
    assert!(
        matches!(r, Err(AppError::Lock(Error::LockLost { .. }))),
        "{r:?}"
    );
    a.shutdown().await;
    b.shutdown().await;
    assert_nothing_left(&server).await;
}
