//! The cache layout's sizes follow the files the agent reads.
//!
//! `high`, `low`, `working_units` and `working_copy_units` are sizes, tuned
//! on sessions whose median read is a few hundred units. On a codebase with
//! files k times as large the same sizes keep fewer views: replaying the real
//! sessions with every read k× as long (k = 2, 3), 82–86% of the edits found
//! their text in view instead of 97.5% (docs/benchmarks.md, "How robust the
//! figures are"). So once a session has made enough reads to tell, those four
//! grow in proportion to its median read above `scale_above` units, up to 2×.

use crate::context::epochs::{units, CachePolicy};

/// Reads before the median counts: the first few are often the largest (the
/// task's main file), and one of them says nothing about the codebase.
pub const MIN_READS: usize = 20;

/// The scale never exceeds 2×: replayed with reads 3× and 4× as large, a
/// cap of 2 kept about as many edits' text in view as 3 or 4 (114 and 107 of 120
/// against 114 and 109) at far less cost (0.221× and 0.188× effective
/// against 0.302× and 0.274×); the misses left are not about size.
pub const MAX_PERMILLE: u64 = 2_000;

/// The sizes (units) of a session's read outputs, sorted.
#[derive(Debug, Default, Clone)]
pub struct ReadSizes {
    sorted: Vec<u64>,
}

impl ReadSizes {
    pub fn clear(&mut self) {
        self.sorted.clear();
    }

    /// One more read output of `chars` chars.
    pub fn insert(&mut self, chars: u64) {
        let u = units(chars);
        let at = self.sorted.partition_point(|&x| x <= u);
        self.sorted.insert(at, u);
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The lower median (units), `None` without reads.
    pub fn median(&self) -> Option<u64> {
        let n = self.sorted.len();
        (n > 0).then(|| self.sorted[(n - 1) / 2])
    }

    /// The scale of the sizes, in thousandths: 1,000 (as configured) until
    /// `MIN_READS` reads are in and while their median is at most
    /// `scale_above` (0: never scale); then median / `scale_above`, at most
    /// `MAX_PERMILLE`.
    pub fn permille(&self, scale_above: u32) -> u64 {
        match self.median() {
            Some(m) if scale_above > 0 && self.len() >= MIN_READS => {
                (m * 1_000 / u64::from(scale_above)).clamp(1_000, MAX_PERMILLE)
            }
            _ => 1_000,
        }
    }
}

impl CachePolicy {
    /// This policy with its four sizes at `permille` thousandths.
    pub fn at_scale(&self, permille: u64) -> CachePolicy {
        let mut p = self.clone();
        if permille != 1_000 {
            let s = |v: u32| u32::try_from(u64::from(v) * permille / 1_000).unwrap_or(u32::MAX);
            p.high = s(p.high);
            p.low = s(p.low);
            p.working_units = s(p.working_units);
            p.working_copy_units = s(p.working_copy_units);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(chars: &[u64]) -> ReadSizes {
        let mut r = ReadSizes::default();
        for &c in chars {
            r.insert(c);
        }
        r
    }

    #[test]
    fn no_scale_before_enough_reads_or_below_the_threshold() {
        assert_eq!(reads(&[40_000; MIN_READS - 1]).permille(1_000), 1_000);
        assert_eq!(reads(&[4_000; MIN_READS]).permille(1_000), 1_000);
        assert_eq!(reads(&[40_000; MIN_READS]).permille(0), 1_000);
    }

    #[test]
    fn the_scale_follows_the_median_read_up_to_two() {
        // 15 reads of 6,000 chars (1,500 units) and 10 tiny ones: median 1,500 units.
        let mut sizes = vec![6_000; 15];
        sizes.extend([40; 10]);
        assert_eq!(reads(&sizes).median(), Some(1_500));
        assert_eq!(reads(&sizes).permille(1_000), 1_500);
        assert_eq!(reads(&[400_000; MIN_READS]).permille(1_000), MAX_PERMILLE);
    }

    #[test]
    fn at_scale_grows_the_four_sizes_only() {
        let d = CachePolicy::default();
        assert_eq!(d.at_scale(1_000), d);
        let p = d.at_scale(1_500);
        assert_eq!(p.high, d.high * 3 / 2);
        assert_eq!(p.low, d.low * 3 / 2);
        assert_eq!(p.working_units, d.working_units * 3 / 2);
        assert_eq!(p.working_copy_units, d.working_copy_units * 3 / 2);
        let rest = CachePolicy {
            high: d.high,
            low: d.low,
            working_units: d.working_units,
            working_copy_units: d.working_copy_units,
            ..p.clone()
        };
        assert_eq!(rest, d);
    }
}
