//! Percentiles of timing samples, as the benchmark runners and the CLI report them.

/// Summary statistics of a sample (microseconds in practice).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Summary {
    /// Number of samples.
    pub count: usize,
    /// Mean.
    pub avg: f64,
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

impl Summary {
    /// Summarizes `samples` (nearest-rank percentiles; all zero when empty).
    pub fn of(samples: &[f64]) -> Summary {
        if samples.is_empty() {
            return Summary::default();
        }
        let mut v = samples.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let q = |p: f64| v[(((p / 100.0) * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Summary {
            count: v.len(),
            avg: v.iter().sum::<f64>() / v.len() as f64,
            p25: q(25.0),
            p50: q(50.0),
            p75: q(75.0),
            p90: q(90.0),
            p95: q(95.0),
            p99: q(99.0),
            p999: q(99.9),
            max: *v.last().unwrap(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let s = Summary::of(&(1..=100).map(|x| x as f64).collect::<Vec<_>>());
        assert_eq!((s.p50, s.p99, s.max, s.count), (50.0, 99.0, 100.0, 100));
        assert_eq!(s.avg, 50.5);
    }
}
