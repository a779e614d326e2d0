//! A bounded counter for counted structures (string characters with `minLength`/`maxLength`
//! next to a pattern, object members with `minProperties`/`maxProperties`): counts run from 0
//! to `max`, or saturate at `min` when there is no `max`, so an automaton times a counter
//! stays finite and its size is states × (cap + 1).

/// Counts items against `[min, max]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Counter {
    /// The fewest items.
    pub(super) min: u32,
    /// The most items (`None`: unbounded).
    pub(super) max: Option<u32>,
}

impl Counter {
    /// The largest count kept.
    pub(super) fn cap(self) -> u32 {
        self.max.unwrap_or(self.min)
    }
    /// The count after one more item, `None` when that exceeds `max`.
    pub(super) fn step(self, c: u32) -> Option<u32> {
        match self.max {
            Some(m) if c >= m => None,
            Some(_) => Some(c + 1),
            None => Some((c + 1).min(self.min)),
        }
    }
    /// Whether `c` items are enough.
    pub(super) fn done(self, c: u32) -> bool {
        c >= self.min
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturates_without_max_and_stops_at_max() {
        let open = Counter { min: 2, max: None };
        assert_eq!((open.step(0), open.step(1), open.step(2)), (Some(1), Some(2), Some(2)));
        assert!(!open.done(1) && open.done(2) && open.cap() == 2);
        let closed = Counter { min: 1, max: Some(3) };
        assert_eq!((closed.step(2), closed.step(3)), (Some(3), None));
        assert!(closed.cap() == 3);
    }
}
