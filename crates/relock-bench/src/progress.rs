//! A progress bar per timed benchmark phase, on `indicatif`: the bar fills with the phase's
//! elapsed time and its message is the live rate of a counter the workers bump.
//!
//! Bars draw to stderr and only when stderr is a terminal (indicatif's stderr target hides
//! itself otherwise), so redirected output and JSON stay free of control sequences.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the bar's position and rate are refreshed.
const TICK: Duration = Duration::from_millis(200);

/// One timed phase on screen. [`Phase::finish`] clears the bar and ends its ticker; dropping
/// the phase (a `?` out of the benchmark) does the same.
pub(crate) struct Phase {
    bar: ProgressBar,
    count: Arc<AtomicU64>,
    ticker: Option<tokio::task::JoinHandle<()>>,
}

impl Phase {
    /// Shows a bar for a phase named `name` that lasts `length`, whose rate is counted in
    /// `unit` per second (e.g. "pairs").
    pub(crate) fn start(name: &str, length: Duration, unit: &'static str) -> Phase {
        Self::with_target(name, length, unit, ProgressDrawTarget::stderr())
    }

    fn with_target(
        name: &str,
        length: Duration,
        unit: &'static str,
        target: ProgressDrawTarget,
    ) -> Phase {
        let length_ms = u64::try_from(length.as_millis()).unwrap_or(u64::MAX).max(1);
        let bar = ProgressBar::with_draw_target(Some(length_ms), target);
        let template = format!(
            "{{prefix:>18}} [{{bar:25}}] {{elapsed:>3}}/{}s {{msg}}",
            length.as_secs()
        );
        bar.set_style(
            ProgressStyle::with_template(&template)
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(name.to_string());
        let count = Arc::new(AtomicU64::new(0));
        let ticker = tokio::spawn({
            let (bar, count) = (bar.clone(), count.clone());
            let start = Instant::now();
            async move {
                let mut every = tokio::time::interval(TICK);
                loop {
                    every.tick().await;
                    let elapsed = start.elapsed();
                    let elapsed_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
                    bar.set_position(elapsed_ms.min(length_ms));
                    let rate = count.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64();
                    bar.set_message(format!("{rate:>9.0} {unit}/s"));
                }
            }
        });
        Phase {
            bar,
            count,
            ticker: Some(ticker),
        }
    }

    /// The counter the workers bump once per unit done (each pair, each handoff).
    pub(crate) fn counter(&self) -> Arc<AtomicU64> {
        self.count.clone()
    }

    /// Ends the phase: stops the ticker (waiting until it has ended) and clears the bar.
    pub(crate) async fn finish(mut self) {
        if let Some(ticker) = self.ticker.take() {
            ticker.abort();
            // Cancelled at its next await: once this returns, nothing touches the bar again.
            let _ = ticker.await;
        }
        self.bar.finish_and_clear();
    }
}

impl Drop for Phase {
    fn drop(&mut self) {
        if let Some(ticker) = self.ticker.take() {
            ticker.abort();
        }
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_bar_follows_the_clock_and_its_ticker_ends_with_the_phase() {
        let phase = Phase::with_target(
            "test",
            Duration::from_millis(300),
            "pairs",
            ProgressDrawTarget::hidden(),
        );
        let bar = phase.bar.clone();
        phase.counter().fetch_add(1000, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(700)).await;
        // Past the phase's length the bar is full, not beyond.
        assert_eq!(bar.position(), 300);
        assert!(bar.message().ends_with(" pairs/s"), "{}", bar.message());
        let ticker = phase.ticker.as_ref().unwrap().abort_handle();
        assert!(!ticker.is_finished());
        phase.finish().await;
        assert!(ticker.is_finished());
        assert!(bar.is_finished());
    }

    #[test]
    fn stderr_bars_are_hidden_when_stderr_is_not_a_terminal() {
        use std::io::IsTerminal;
        // Under `cargo test` stderr is captured or piped; on a terminal this says nothing.
        if !std::io::stderr().is_terminal() {
            assert!(ProgressDrawTarget::stderr().is_hidden());
        }
    }
}
