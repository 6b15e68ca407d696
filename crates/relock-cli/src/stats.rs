//! Percentiles over recorded latencies.

use std::time::Duration;

/// p-th percentile (0..=100) of `samples`, by nearest rank; zero when empty.
pub(crate) fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
    samples[rank.clamp(1, samples.len()) - 1]
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let mut v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&mut v, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&mut v, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&mut [], 50.0), Duration::ZERO);
    }
}
