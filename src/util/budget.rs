//! [`StepBudget`]: what one matcher call may make a parser do and hold.
//!
//! Why counts and not a clock: the bound must give the same answer on a loaded machine as on a
//! quiet one (a step either fits or it does not, whatever else runs), and reading a counter
//! costs nothing in the parser's inner loop. Work is counted in *item visits*: an Earley item
//! added to a set (and then closed: predicted from, completed), an item of the previous set
//! scanned for a byte, a waiting item recorded by a prediction or read by a completion; for the
//! PDA, a thread scanned or visited by its closure. Each is a handful of nanoseconds, so the
//! count is proportional to time. Memory is counted in bytes of parser state, as the parser
//! reports it after each byte (and every few thousand items inside a large set), so that not
//! even one step can grow a chart without bound.

/// Why a budget refused a byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The item visits went over the work limit.
    Work,
    /// The parser's state would hold this many bytes, over the byte limit.
    Bytes(usize),
}

/// How much work a parser may still do in the current call, how large its state may grow, and
/// whether it went over either.
///
/// A parser carries one (unlimited unless set); the matcher sets a fresh one at the start of
/// each call. Once a charge or a byte check has gone over a limit the budget stays
/// [`exceeded`](StepBudget::exceeded), and the parser refuses every further byte until the
/// budget is replaced, so a caller only has to look at it once, after the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepBudget {
    limit: u64,
    used: u64,
    max_bytes: usize,
    stop: Option<Stop>,
}

impl Default for StepBudget {
    fn default() -> Self {
        StepBudget::UNLIMITED
    }
}

impl StepBudget {
    /// No limit (what isolated parsers, the oracle and the cache builds run with).
    pub const UNLIMITED: StepBudget = StepBudget { limit: u64::MAX, used: 0, max_bytes: usize::MAX, stop: None };

    /// A budget of `limit` item visits and `max_bytes` bytes of parser state, none used.
    pub fn new(limit: u64, max_bytes: usize) -> Self {
        StepBudget { limit, used: 0, max_bytes, stop: None }
    }

    /// Counts `n` visits; returns `false` (and stays exceeded) once the total is over the limit
    /// or the budget was already exceeded.
    #[inline]
    pub fn charge(&mut self, n: u64) -> bool {
        self.used = self.used.saturating_add(n);
        if self.used > self.limit && self.stop.is_none() {
            self.stop = Some(Stop::Work);
        }
        self.stop.is_none()
    }

    /// Checks the parser's state size; returns `false` (and stays exceeded) when `bytes` is over
    /// the byte limit or the budget was already exceeded.
    #[inline]
    pub fn check_bytes(&mut self, bytes: usize) -> bool {
        if bytes > self.max_bytes && self.stop.is_none() {
            self.stop = Some(Stop::Bytes(bytes));
        }
        self.stop.is_none()
    }

    /// Whether a charge or a byte check went over a limit.
    #[inline]
    pub fn exceeded(&self) -> bool {
        self.stop.is_some()
    }

    /// Which limit was exceeded first, if any.
    pub fn stop(&self) -> Option<Stop> {
        self.stop
    }

    /// The visits counted so far.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// The work limit (`u64::MAX`: none).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The byte limit (`usize::MAX`: none).
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn going_over_a_limit_sticks_and_the_first_reason_is_kept() {
        let mut b = StepBudget::new(10, 100);
        assert!(b.charge(10) && b.check_bytes(100) && !b.exceeded());
        assert!(!b.charge(1) && b.exceeded() && b.used() == 11);
        assert!(!b.charge(0) && !b.check_bytes(0), "an exceeded budget stays exceeded");
        assert_eq!(b.stop(), Some(Stop::Work));
        let mut b = StepBudget::new(10, 100);
        assert!(!b.check_bytes(101) && !b.charge(100));
        assert_eq!(b.stop(), Some(Stop::Bytes(101)));
        let mut free = StepBudget::UNLIMITED;
        assert!(free.charge(u64::MAX) && free.check_bytes(usize::MAX));
    }
}
