//! [`StepBudget`]: what one matcher call may make a parser do and hold.
//!
//! Why counts and not a clock: the bound must give the same answer on a loaded machine as on a
//! quiet one (a step either fits or it does not, whatever else runs), and reading a counter
//! costs nothing in the parser's inner loop. Work is counted in *item visits*: an Earley item
//! added to a set (and then closed: predicted from, completed), an item of the previous set
//! scanned for a byte, a waiting item recorded by a prediction or read by a completion; for the
//! PDA, a thread scanned or visited by its closure. Each is a handful of nanoseconds, so the
//! count is proportional to time. Memory is counted in bytes of parser state, which the parser
//! reports whenever [`BYTES_CHECK_PERIOD`] visits have passed since the last check (inside a
//! set too), so that not even one step can grow a chart without bound, while a byte that adds a
//! few items pays nothing for it: each visit adds at most an item or a waiting item, so the
//! state passes the limit by at most what a period adds (tens of kilobytes).

/// Visits between two checks of the parser's state size.
pub const BYTES_CHECK_PERIOD: u64 = 1024;

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
/// each call. Once a limit is passed the budget stays [`exceeded`](StepBudget::exceeded), and
/// the parser refuses every further byte until the budget is replaced, so a caller only has to
/// look at it once, after the call.
///
/// The parser's inner loops call [`StepBudget::tick`], one addition and one comparison against
/// a single threshold (the nearer of the work limit and the next state-size check); only when
/// it passes do they call the out-of-line [`StepBudget::settle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepBudget {
    limit: u64,
    used: u64,
    max_bytes: usize,
    /// `used` at which the state size is due for a check (`u64::MAX`: never).
    next_check: u64,
    /// `used` above which [`StepBudget::tick`] asks for [`StepBudget::settle`].
    threshold: u64,
    stop: Option<Stop>,
}

impl Default for StepBudget {
    fn default() -> Self {
        StepBudget::UNLIMITED
    }
}

impl StepBudget {
    /// No limit (what isolated parsers, the oracle and the cache builds run with).
    pub const UNLIMITED: StepBudget = StepBudget {
        limit: u64::MAX,
        used: 0,
        max_bytes: usize::MAX,
        next_check: u64::MAX,
        threshold: u64::MAX,
        stop: None,
    };

    /// A budget of `limit` item visits and `max_bytes` bytes of parser state, none used.
    pub fn new(limit: u64, max_bytes: usize) -> Self {
        let next_check = if max_bytes == usize::MAX { u64::MAX } else { BYTES_CHECK_PERIOD };
        let mut b = StepBudget { limit, used: 0, max_bytes, next_check, threshold: 0, stop: None };
        b.rearm(false);
        b
    }

    /// Counts `n` visits; returns `true` when the caller must [`settle`](StepBudget::settle)
    /// (a limit may be passed, or the state size is due for a check).
    #[inline]
    pub fn tick(&mut self, n: u64) -> bool {
        self.used = self.used.saturating_add(n);
        self.used > self.threshold
    }

    /// Counts `n` visits where the state size cannot be measured; returns `false` (and stays
    /// exceeded) once over the work limit. A state-size check that falls due is left to the
    /// caller's next [`StepBudget::bytes_due`].
    #[inline]
    pub fn charge(&mut self, n: u64) -> bool {
        !self.tick(n) || self.settle(None)
    }

    /// After a [`tick`](StepBudget::tick) that asked for it: checks the work limit and, when
    /// due and given, the parser's state size `bytes`. Returns `false` (and stays exceeded)
    /// once over a limit.
    #[cold]
    #[inline(never)]
    pub fn settle(&mut self, bytes: Option<usize>) -> bool {
        let mut unmeasured = false;
        if self.stop.is_none() {
            if self.used > self.limit {
                self.stop = Some(Stop::Work);
            } else if self.bytes_due() {
                match bytes {
                    Some(b) => return self.check_bytes(b),
                    None => unmeasured = true,
                }
            }
        }
        self.rearm(unmeasured);
        self.stop.is_none()
    }

    /// Whether the parser should report its state size ([`StepBudget::check_bytes`]): once
    /// [`BYTES_CHECK_PERIOD`] visits have passed since the last check.
    #[inline]
    pub fn bytes_due(&self) -> bool {
        self.used >= self.next_check
    }

    /// Checks the parser's state size; returns `false` (and stays exceeded) when `bytes` is over
    /// the byte limit or the budget was already exceeded.
    pub fn check_bytes(&mut self, bytes: usize) -> bool {
        self.next_check = self.used.saturating_add(BYTES_CHECK_PERIOD);
        if bytes > self.max_bytes {
            self.stop.get_or_insert(Stop::Bytes(bytes));
        }
        self.rearm(false);
        self.stop.is_none()
    }

    /// Sets the threshold of [`StepBudget::tick`]: every tick once exceeded; the work limit
    /// alone while a due size check waits for the caller; else the nearer of the two.
    fn rearm(&mut self, size_check_waiting: bool) {
        self.threshold = if self.stop.is_some() {
            0
        } else if size_check_waiting {
            self.limit
        } else {
            self.limit.min(self.next_check.saturating_sub(1))
        };
    }

    /// Whether a limit was passed.
    #[inline]
    pub fn exceeded(&self) -> bool {
        self.stop.is_some()
    }

    /// Which limit was passed first, if any.
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
        assert!(b.charge(10) && !b.exceeded());
        assert!(!b.charge(1) && b.exceeded() && b.used() == 11);
        assert!(!b.charge(0) && !b.check_bytes(0), "an exceeded budget stays exceeded");
        assert_eq!(b.stop(), Some(Stop::Work));
        let mut b = StepBudget::new(10, 100);
        assert!(!b.check_bytes(101) && !b.charge(1));
        assert_eq!(b.stop(), Some(Stop::Bytes(101)));
        let mut free = StepBudget::UNLIMITED;
        assert!(free.charge(u64::MAX) && free.check_bytes(usize::MAX));
    }

    #[test]
    fn the_state_size_is_due_every_period() {
        let mut b = StepBudget::new(u64::MAX, 100);
        assert!(!b.tick(BYTES_CHECK_PERIOD - 1) && b.tick(1) && b.bytes_due());
        // A caller that cannot measure now leaves the check due, and ticks stay cheap.
        assert!(b.settle(None) && b.bytes_due() && !b.tick(1));
        assert!(b.check_bytes(100) && !b.bytes_due(), "checked: due again a period later");
        assert!(b.tick(BYTES_CHECK_PERIOD) && !b.settle(Some(101)));
        assert_eq!(b.stop(), Some(Stop::Bytes(101)));
        let mut no_bytes = StepBudget::new(u64::MAX, usize::MAX);
        assert!(!no_bytes.tick(1 << 40) && !no_bytes.bytes_due(), "no byte limit: never due");
    }
}
