//! [`every`]: the crate's one periodic loop (the watchdog's rounds, the fair line's heartbeats,
//! the pub/sub keep-alive, the quorum's uptime checks and reconnects). Each such task ends
//! with what it works for: when its owner is dropped, or when shutdown begins.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;

/// Runs `round` on `owner` after `first`, then again after each delay a round returns, until a
/// round returns `None`, the owner is gone, or `stop` turns true. A zero delay runs the next
/// round at once. A round that has started runs to its end (stopping mid-round is the round's
/// own choice: it may race `stop` itself); the owner is held only while a round runs.
pub(crate) async fn every<T, F, Fut>(
    owner: Weak<T>,
    mut stop: watch::Receiver<bool>,
    first: Duration,
    mut round: F,
) where
    F: FnMut(Arc<T>) -> Fut,
    Fut: Future<Output = Option<Duration>>,
{
    let mut delay = first;
    loop {
        if delay.is_zero() {
            if *stop.borrow() {
                return;
            }
        } else {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
        let Some(owner) = owner.upgrade() else {
            return;
        };
        match round(owner).await {
            Some(next) => delay = next,
            None => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn rounds_follow_the_delays_and_end_with_the_owner_or_at_stop() {
        let owner = Arc::new(AtomicU32::new(0));
        let (tx, rx) = watch::channel(false);
        let task = tokio::spawn(every(
            Arc::downgrade(&owner),
            rx.clone(),
            Duration::ZERO,
            |o| async move {
                let n = o.fetch_add(1, Ordering::SeqCst) + 1;
                (n < 3).then_some(Duration::from_millis(1))
            },
        ));
        tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            owner.load(Ordering::SeqCst),
            3,
            "a round returning None ends the loop"
        );

        let task = tokio::spawn(every(
            Arc::downgrade(&owner),
            rx.clone(),
            Duration::from_millis(1),
            |_| async { Some(Duration::from_millis(1)) },
        ));
        tx.send_replace(true);
        tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .unwrap()
            .unwrap();

        let (_tx, rx) = watch::channel(false);
        let gone = Arc::new(());
        let task = tokio::spawn(every(
            Arc::downgrade(&gone),
            rx,
            Duration::from_millis(1),
            |_| async { Some(Duration::from_millis(1)) },
        ));
        drop(gone);
        tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .unwrap()
            .unwrap();
    }
}
