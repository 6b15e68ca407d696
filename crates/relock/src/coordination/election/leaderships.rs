//! `Leaderships`, this client's leaderships (the election's per-client state): their records
//! renewed in the watchdog's round, and resigned at shutdown.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use crate::client::inner::{Inner, KindState, Round};
use crate::coordination::election::record::{resign_record, Led, ELECTION_RENEW};
use crate::hold::backend::BoxFuture;

/// This client's leaderships: their records are renewed in the watchdog's round.
#[derive(Debug, Default)]
pub(super) struct Leaderships(Mutex<Vec<Weak<Led>>>);

impl Leaderships {
    pub(super) fn add(&self, led: Weak<Led>) {
        let mut all = self.0.lock().unwrap();
        all.retain(|l| l.strong_count() > 0);
        all.push(led);
    }

    fn live(&self) -> Vec<Arc<Led>> {
        let mut all = self.0.lock().unwrap();
        all.retain(|l| l.strong_count() > 0);
        all.iter().filter_map(Weak::upgrade).collect()
    }
}

impl Leaderships {
    fn resign_all(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>) {
        for led in self.live() {
            let inner = inner.clone();
            work.spawn(async move {
                if let Err(e) = resign_record(&inner, &led).await {
                    tracing::debug!(error = %e, "resigning an election's record at shutdown failed");
                }
            });
        }
    }
}

impl KindState for Leaderships {
    /// Each live leadership resigns its record (observers see `Resigned`) before its lock is
    /// released, as a leader's own resignation does: an observer woken by the release then
    /// reads the resignation, not a record whose lock is free (which it reports as `Expired`).
    fn before_releases(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>) {
        self.resign_all(inner, work);
    }

    /// Again in the late round: a campaign whose record was being written as shutdown began
    /// is resigned there if its reply came meanwhile (the first resignation may have reached
    /// the server before the write); a record resigned already is left as it is.
    fn at_shutdown(&self, inner: &Arc<Inner>, work: &mut tokio::task::JoinSet<()>, round: Round) {
        if round == Round::Late {
            self.resign_all(inner, work);
        }
    }

    /// Each live leadership's record, lengthened to the watchdog lease if its lock is still
    /// its own: one call each (a client leads few elections).
    fn renewals(&self, inner: &Arc<Inner>) -> Vec<BoxFuture<bool>> {
        let lease = inner.settings().watchdog_lease.as_millis().to_string();
        self.live()
            .into_iter()
            .map(|led| {
                let (inner, lease) = (inner.clone(), lease.clone());
                Box::pin(async move {
                    // Read before sending as well as at the reply: a renewal that reached the
                    // server before the term's record was written finds none, and its reply
                    // may come after the record's (another connection).
                    let recorded = led.recorded.load(Ordering::SeqCst);
                    let r = ELECTION_RENEW
                        .run::<i64>(
                            inner.conn(),
                            vec![led.lock.clone(), led.record.clone()],
                            vec![lease, led.field.clone()],
                        )
                        .await;
                    if recorded && matches!(r, Ok(2)) {
                        led.not_leading(
                            "the election's record is gone (deleted or evicted) while its leader held the lock",
                        );
                    }
                    r.is_ok()
                }) as BoxFuture<bool>
            })
            .collect()
    }
}
