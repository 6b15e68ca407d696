//! The rate kind's checker: in every window of the limiter's interval, across all clients, at
//! most its rate of permits granted, judged from the history alone.
//!
//! A grant is known only to lie between the moment its call was sent and the moment its reply
//! came back (both on the machine's `CLOCK_MONOTONIC`, which every client shares and no clock
//! fault moves). So the checker is conservative: a set of grants is certainly inside one window
//! only if the last reply came less than the interval after the first call was sent (less a
//! slack for the server's whole-millisecond scores). More than the rate in such a set is a
//! violation; wide intervals (a paused client, a held reply) can only hide one, never make one.

use std::collections::BTreeMap;

use crate::check::{Verdict, Window};
use crate::history::{Event, Nanos, Op};

const MS: Nanos = 1_000_000;

/// The server scores a grant in whole milliseconds (its `TIME`, truncated) and counts a record
/// until `interval` after its score: two grants nearly a millisecond less than the interval
/// apart may both be allowed. Two milliseconds of slack cover that and the rounding.
const SCORE_SLACK: Nanos = 2 * MS;

/// One grant: its client, and when its call was sent and its reply received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub client: u32,
    pub sent: Nanos,
    pub replied: Nanos,
}

/// The grants in `events`, per name, in the order their calls were sent.
pub fn grants(events: &[Event]) -> BTreeMap<&str, Vec<Grant>> {
    let mut out: BTreeMap<&str, Vec<Grant>> = BTreeMap::new();
    for e in events {
        if let Op::Granted { sent } = e.op {
            out.entry(e.n.as_str()).or_default().push(Grant {
                client: e.c,
                sent,
                replied: e.t,
            });
        }
    }
    for g in out.values_mut() {
        g.sort_by_key(|g| (g.sent, g.replied));
    }
    out
}

/// The fault that may explain too many grants in one window: one that cannot guarantee the
/// limit (a server restarted empty forgets the records; a jump of the server's clock expires
/// them), whose damage falls inside the span of the grants: the first call sent before it
/// ended (that grant may be one the server then forgot), and the last reply received after it
/// began. Grants all sent after the damage are never excused.
fn excusing(windows: &[Window], first_sent: Nanos, last_replied: Nanos) -> Option<&Window> {
    windows
        .iter()
        .find(|w| !w.exclusion_required && first_sent <= w.damage.1 && last_replied >= w.damage.0)
}

/// At most `rate` grants of one name in any window of `interval`. Each grant that begins (by
/// the time its call was sent) a set of `rate + 1` grants certainly inside one window is one
/// violation, or one excused if a fault that may forget records falls inside that set.
pub fn check(events: &[Event], windows: &[Window], rate: u64, interval: Nanos) -> Verdict {
    let mut v = Verdict::default();
    let rate = rate as usize;
    let span = interval - SCORE_SLACK;
    for (name, gs) in grants(events) {
        for (i, first) in gs.iter().enumerate() {
            // The grants whose call was sent at or after `first`'s, and could share its window.
            let mut replies: Vec<(Nanos, u32)> = gs[i..]
                .iter()
                .take_while(|g| g.sent < first.sent + span)
                .map(|g| (g.replied, g.client))
                .collect();
            if replies.len() <= rate {
                continue;
            }
            replies.sort_unstable();
            // The `rate + 1` that were replied to soonest: the tightest set that begins here.
            let last = replies[rate].0;
            if last - first.sent >= span {
                continue;
            }
            let clients: Vec<u32> = replies[..=rate].iter().map(|(_, c)| *c).collect();
            let what = format!(
                "{name}: {} permits granted within {} ms (calls sent from {} on, all replied by {}; clients {clients:?}): more than the rate of {rate} per {} ms",
                rate + 1,
                (last - first.sent) / MS,
                first.sent,
                last,
                interval / MS
            );
            match excusing(windows, first.sent, last) {
                Some(w) => {
                    v.excused += 1;
                    if v.examples.len() < 5 {
                        v.examples.push(format!("excused by {}: {what}", w.nemesis));
                    }
                }
                None => v.violation(what),
            }
        }
    }
    v.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(c: u32, n: &str, sent_ms: i64, replied_ms: i64) -> Event {
        Event {
            t: replied_ms * MS,
            c,
            n: n.into(),
            op: Op::Granted { sent: sent_ms * MS },
        }
    }

    fn fault(exclusion_required: bool, at_ms: i64) -> Window {
        Window {
            nemesis: "kill-restart".into(),
            start: at_ms * MS,
            heal: (at_ms + 300) * MS,
            exclusion_required,
            damage: (at_ms * MS, at_ms * MS),
        }
    }

    /// `count` grants of `n`, one every `every` ms from `from`, each replied 1 ms after sent,
    /// by clients in turn.
    fn steady(n: &str, from: i64, every: i64, count: i64) -> Vec<Event> {
        (0..count)
            .map(|k| {
                let t = from + k * every;
                granted((k % 3) as u32, n, t, t + 1)
            })
            .collect()
    }

    #[test]
    fn grants_at_the_limit_pass_and_one_more_in_a_window_fails() {
        // 2 per 100 ms: pairs exactly 100 ms apart.
        let mut ok = Vec::new();
        for k in 0..10 {
            ok.push(granted(0, "a", k * 100, k * 100 + 1));
            ok.push(granted(1, "a", k * 100 + 1, k * 100 + 2));
        }
        let v = check(&crate::history::merge(vec![ok.clone()]), &[], 2, 100 * MS);
        assert!(v.ok, "{v:?}");
        // A third grant 50 ms into a window.
        ok.push(granted(2, "a", 350, 352));
        let v = check(&crate::history::merge(vec![ok]), &[], 2, 100 * MS);
        assert!(!v.ok);
        assert!(v.violations >= 1, "{v:?}");
        // Other names never count together.
        let two = [steady("a", 0, 50, 10), steady("b", 1, 50, 10)].concat();
        assert!(check(&crate::history::merge(vec![two]), &[], 2, 100 * MS).ok);
    }

    #[test]
    fn wide_intervals_never_make_a_violation() {
        // Three grants whose calls were sent together but whose replies spread over the
        // interval (a paused client, a held reply): they may lie in different windows.
        let events = vec![
            granted(0, "a", 0, 1),
            granted(1, "a", 1, 60),
            granted(2, "a", 2, 120),
        ];
        let v = check(&crate::history::merge(vec![events]), &[], 2, 100 * MS);
        assert!(v.ok, "{v:?}");
        // Within the score slack of the interval: still not certain.
        let events = vec![
            granted(0, "a", 0, 1),
            granted(1, "a", 1, 2),
            granted(2, "a", 97, 98),
        ];
        assert!(check(&crate::history::merge(vec![events]), &[], 2, 100 * MS).ok);
    }

    #[test]
    fn a_fault_that_forgets_records_excuses_only_windows_across_it() {
        // Two grants before a restart at 50 ms, two after it, in one window of 100 ms.
        let events = vec![
            granted(0, "a", 0, 1),
            granted(1, "a", 10, 11),
            granted(0, "a", 60, 61),
            granted(1, "a", 70, 71),
        ];
        let events = crate::history::merge(vec![events]);
        let v = check(&events, &[fault(false, 50)], 2, 100 * MS);
        assert!(v.ok && v.excused >= 1, "{v:?}");
        // A fault that must keep the limit excuses nothing.
        let v = check(&events, &[fault(true, 50)], 2, 100 * MS);
        assert!(!v.ok, "{v:?}");
        // Three grants after the restart alone are not excused.
        let after = vec![
            granted(0, "a", 60, 61),
            granted(1, "a", 70, 71),
            granted(2, "a", 80, 81),
        ];
        let v = check(
            &crate::history::merge(vec![after]),
            &[fault(false, 50)],
            2,
            100 * MS,
        );
        assert!(!v.ok, "{v:?}");
    }
}
