//! Latency distributions of the benchmarks, on `hdrhistogram`.

use std::time::Duration;

use hdrhistogram::Histogram;

/// The longest latency told apart: an hour (longer ones are counted as an hour).
const HIGHEST_US: u64 = 3_600_000_000;

/// Recorded latencies, in microseconds with 3 significant digits (0.1% precision): constant
/// memory however long a benchmark runs, and percentiles without sorting.
#[derive(Clone)]
pub(crate) struct Latencies(Histogram<u64>);

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl Latencies {
    pub(crate) fn new() -> Self {
        Latencies(Histogram::new_with_bounds(1, HIGHEST_US, 3).expect("valid histogram bounds"))
    }

    pub(crate) fn record(&mut self, d: Duration) {
        self.0
            .saturating_record(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    /// How many latencies were recorded.
    pub(crate) fn len(&self) -> u64 {
        self.0.len()
    }

    /// The p-th percentile (0..=100): the highest latency that p% of the samples are at most
    /// (within 0.1%); zero when empty.
    pub(crate) fn percentile(&self, p: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        Duration::from_micros(self.0.value_at_quantile(p / 100.0))
    }

    pub(crate) fn max(&self) -> Duration {
        Duration::from_micros(self.0.max())
    }

    /// (latency in ms, fraction of samples at most that latency) at every recorded value, in
    /// increasing order: the distribution function, for plots.
    pub(crate) fn cdf_ms(&self) -> Vec<(f64, f64)> {
        self.0
            .iter_recorded()
            .map(|v| {
                (
                    v.value_iterated_to() as f64 / 1000.0,
                    v.quantile_iterated_to(),
                )
            })
            .collect()
    }

    /// (latency in ms, count) at every recorded value, in increasing order.
    pub(crate) fn counts_ms(&self) -> Vec<(f64, u64)> {
        self.0
            .iter_recorded()
            .map(|v| (v.value_iterated_to() as f64 / 1000.0, v.count_at_value()))
            .collect()
    }
}

/// A duration in milliseconds, to the microsecond (the histograms' unit), as the JSON and the
/// plots give it.
pub(crate) fn as_ms(d: Duration) -> f64 {
    (d.as_nanos() as f64 / 1000.0).round() / 1000.0
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.3} ms", as_ms(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: Duration, want: Duration) -> bool {
        got.abs_diff(want) <= want / 1000
    }

    #[test]
    fn percentiles_are_within_a_thousandth() {
        let mut l = Latencies::new();
        // Out of order, so that a histogram that kept insertion order would be caught.
        for ms in (1..=100).rev() {
            l.record(Duration::from_millis(ms));
        }
        assert_eq!(l.len(), 100);
        assert!(
            close(l.percentile(50.0), Duration::from_millis(50)),
            "{:?}",
            l.percentile(50.0)
        );
        assert!(
            close(l.percentile(99.0), Duration::from_millis(99)),
            "{:?}",
            l.percentile(99.0)
        );
        assert!(close(l.percentile(100.0), Duration::from_millis(100)));
        assert!(close(l.max(), Duration::from_millis(100)));
        assert_eq!(Latencies::new().percentile(50.0), Duration::ZERO);
    }

    #[test]
    fn the_cdf_rises_to_one_and_the_counts_add_up() {
        let mut l = Latencies::new();
        for us in [300, 300, 300, 900] {
            l.record(Duration::from_micros(us));
        }
        let cdf = l.cdf_ms();
        assert_eq!(cdf.len(), 2);
        assert!((cdf[0].0 - 0.3).abs() < 0.001 && (cdf[0].1 - 0.75).abs() < 1e-9);
        assert!((cdf[1].1 - 1.0).abs() < 1e-9);
        assert_eq!(l.counts_ms().iter().map(|c| c.1).sum::<u64>(), 4);
    }
}
