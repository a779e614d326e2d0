//! Compile deadlines, cancellation and byte budgets: a [`Watch`] the compiler sets up for one
//! compile call, [`check`], which every phase that can grow calls in its loops, and
//! [`charge_bytes`], which the dominant growth points call with what they allocate.
//!
//! The watch is *ambient*: [`Watch::run`] installs it in a thread-local for the duration of a
//! call, so the front-ends and the automaton passes need no extra parameter (they are also
//! public functions, called without any watch, where [`check`] is a no-op). Work handed to other
//! threads (the rayon jobs of a precompute) takes the watch along with [`current`] and
//! [`Watch::poll`].
//!
//! [`check`] is cheap enough for inner loops: it reads the clock and the cancellation flag only
//! on every [`CHECK_EVERY`]th call of the thread. The first interruption a watch sees is kept
//! ([`Watch::tripped`]), so the compiler reports it whatever error type the phase had to wrap it
//! in.
//!
//! # The byte budget
//!
//! A compile's memory is dominated by a few growth points (`docs/reliability.md`, "Limits"):
//! the Thompson automaton of a rule (16 bytes per edge), the copies epsilon removal makes of it
//! (its edges bucketed by source, and its epsilon-free output), the grammar IR's nodes and the
//! JSON Schema lowering's literal text. Each charges what it allocates to the watch
//! ([`charge_bytes`], a shared atomic counter, so the rayon jobs of a compile count into the
//! same budget); past the budget the compile is interrupted like a timeout, with
//! [`InterruptReason::TooLarge`]. The count is cumulative (what a rule's passes free is not
//! given back), so it bounds the peak of these structures from above, and bounds the compile's
//! work with them. Cache hits skip the growth points, so a compile that reuses cached rule
//! automata counts less than a cold one.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How many [`check`] calls of one thread share one look at the clock and the flag.
pub const CHECK_EVERY: u32 = 64;

/// A handle another thread can trip to stop a compile (see
/// `GrammarCompiler::with_cancel_token`). Clones share the flag.
///
/// # Example
/// ```
/// use maskforge::CancelToken;
/// let token = CancelToken::new();
/// let other = token.clone();
/// std::thread::spawn(move || other.cancel()).join().unwrap();
/// assert!(token.is_cancelled());
/// ```
#[derive(Clone, Debug, Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }
    /// Asks every compile watching this token to stop (at its next check).
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }
    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

/// Why a compile stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterruptReason {
    /// The compile ran past its time limit (the configured limit).
    Timeout(Duration),
    /// Its [`CancelToken`] was cancelled.
    Cancelled,
    /// Its growth points allocated more than this many bytes (`CompilerConfig::max_compile_bytes`).
    TooLarge(u64),
}

/// A compile stopped by its deadline or its [`CancelToken`], with the phase it was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Interrupted {
    /// Timeout or cancellation.
    pub reason: InterruptReason,
    /// The phase that noticed (`"JSON Schema lowering"`, `"subset construction"`, ...).
    pub phase: &'static str,
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            InterruptReason::Timeout(limit) => {
                write!(f, "compile timed out after {} ms (in {})", limit.as_millis(), self.phase)
            }
            InterruptReason::Cancelled => write!(f, "compile cancelled (in {})", self.phase),
            InterruptReason::TooLarge(limit) => write!(
                f,
                "compile stopped: more than {limit} bytes allocated at its growth points \
                 (CompilerConfig::max_compile_bytes; in {})",
                self.phase
            ),
        }
    }
}

/// The limits of one compile call: a deadline, a cancellation token, or both. Cheap to clone
/// (an `Arc`).
#[derive(Clone, Debug)]
pub struct Watch {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    deadline: Option<(Instant, Duration)>,
    token: Option<CancelToken>,
    /// The byte budget (`u64::MAX`: none) and what the growth points charged so far.
    max_bytes: u64,
    bytes: AtomicU64,
    /// The first interruption seen, by any thread.
    tripped: OnceLock<Interrupted>,
}

thread_local! {
    static CURRENT: RefCell<Option<Watch>> = const { RefCell::new(None) };
    static TICKS: Cell<u32> = const { Cell::new(0) };
    /// The bytes the last watched compile of this thread charged (see [`last_compile_bytes`]).
    static LAST_BYTES: Cell<u64> = const { Cell::new(0) };
}

impl Watch {
    /// A watch ending `timeout` from now (if any), when `token` is cancelled (if any), or when
    /// the growth points have charged more than `max_bytes` (if any); `None` when there is
    /// nothing to watch.
    pub fn new(timeout: Option<Duration>, token: Option<CancelToken>, max_bytes: Option<u64>) -> Option<Self> {
        if timeout.is_none() && token.is_none() && max_bytes.is_none() {
            return None;
        }
        let deadline = timeout.map(|t| (Instant::now() + t, t));
        let max_bytes = max_bytes.unwrap_or(u64::MAX);
        let shared = Shared { deadline, token, max_bytes, bytes: AtomicU64::new(0), tripped: OnceLock::new() };
        Some(Watch { shared: Arc::new(shared) })
    }

    /// Counts `n` bytes allocated at a growth point; records and returns the interruption once
    /// the total is over the budget.
    ///
    /// # Errors
    /// [`Interrupted`] with [`InterruptReason::TooLarge`] (or an earlier interruption).
    pub fn charge(&self, n: usize, phase: &'static str) -> Result<(), Interrupted> {
        let total = self.shared.bytes.fetch_add(n as u64, Ordering::Relaxed).saturating_add(n as u64);
        if total > self.shared.max_bytes {
            let reason = InterruptReason::TooLarge(self.shared.max_bytes);
            return Err(*self.shared.tripped.get_or_init(|| Interrupted { reason, phase }));
        }
        match self.shared.tripped.get() {
            Some(&first) => Err(first),
            None => Ok(()),
        }
    }

    /// The bytes the growth points charged so far.
    pub fn bytes_charged(&self) -> u64 {
        self.shared.bytes.load(Ordering::Relaxed)
    }

    /// Records [`Watch::bytes_charged`] as this thread's [`last_compile_bytes`].
    pub fn record_bytes(&self) {
        LAST_BYTES.set(self.bytes_charged());
    }

    /// Runs `f` with this watch installed on the current thread (restored afterwards, also
    /// when `f` panics).
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let _restore = Restore(CURRENT.with(|c| c.borrow_mut().replace(self.clone())));
        f()
    }

    /// Looks at the flag and the clock now; records and returns the interruption, if any.
    ///
    /// # Errors
    /// [`Interrupted`] when the deadline has passed or the token is cancelled.
    pub fn poll(&self, phase: &'static str) -> Result<(), Interrupted> {
        if let Some(&first) = self.shared.tripped.get() {
            return Err(first);
        }
        let reason = if self.shared.token.as_ref().is_some_and(CancelToken::is_cancelled) {
            InterruptReason::Cancelled
        } else {
            match self.shared.deadline {
                Some((at, limit)) if Instant::now() >= at => InterruptReason::Timeout(limit),
                _ => return Ok(()),
            }
        };
        Err(*self.shared.tripped.get_or_init(|| Interrupted { reason, phase }))
    }

    /// The first interruption this watch saw, if any.
    pub fn tripped(&self) -> Option<Interrupted> {
        self.shared.tripped.get().copied()
    }
}

/// The watch installed on this thread, if any (to hand to other threads' jobs).
pub fn current() -> Option<Watch> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Runs `f` with no watch installed on this thread (restored afterwards): for parallel
/// sections, whose jobs take the watch explicitly, while this thread may run unrelated jobs.
pub fn detached<R>(f: impl FnOnce() -> R) -> R {
    match current() {
        Some(_) => {
            let saved = CURRENT.with(|c| c.borrow_mut().take());
            let restore = Restore(saved);
            let r = f();
            drop(restore);
            r
        }
        None => f(),
    }
}

/// Puts the saved watch back when dropped (also during a panic).
struct Restore(Option<Watch>);

impl Drop for Restore {
    fn drop(&mut self) {
        CURRENT.with(|c| *c.borrow_mut() = self.0.take());
    }
}

/// Checks the current thread's watch, looking at the clock and the flag on every
/// [`CHECK_EVERY`]th call (a no-op without a watch).
///
/// # Errors
/// [`Interrupted`] once the compile is past its deadline or cancelled.
#[inline]
pub fn check(phase: &'static str) -> Result<(), Interrupted> {
    let ticks = TICKS.with(|t| {
        let n = t.get().wrapping_add(1);
        t.set(n);
        n
    });
    if ticks % CHECK_EVERY != 0 {
        return Ok(());
    }
    check_now(phase)
}

/// How many iterations of an automaton pass's loop share one look at the clock and the flag
/// (see [`check_at`]).
pub const POLL_EVERY: usize = 1024;

/// [`check_now`] on every [`POLL_EVERY`]th value of the loop counter `i` (`i = 0` included):
/// for the inner loops of one rule's automaton construction (epsilon removal, suffix merging,
/// subset construction, minimization), which count their iterations anyway, so the skip costs
/// a remainder instead of [`check`]'s thread-local counter.
///
/// # Errors
/// As [`check`].
#[inline]
pub fn check_at(i: usize, phase: &'static str) -> Result<(), Interrupted> {
    if i % POLL_EVERY != 0 {
        return Ok(());
    }
    check_now(phase)
}

/// Charges `n` bytes allocated at a growth point to the current thread's watch (a no-op
/// without one; see the module documentation).
///
/// # Errors
/// [`Interrupted`] once the compile is over its byte budget (or interrupted otherwise).
pub fn charge_bytes(n: usize, phase: &'static str) -> Result<(), Interrupted> {
    CURRENT.with(|c| c.borrow().as_ref().map_or(Ok(()), |w| w.charge(n, phase)))
}

/// The bytes the growth points charged in the last compile this thread ran under a watch (0
/// before any): what `CompilerConfig::max_compile_bytes` compares, for measuring real grammars.
pub fn last_compile_bytes() -> u64 {
    LAST_BYTES.get()
}

/// [`check`] without skipping: at phase boundaries, where a look at the clock is cheap
/// relative to the work.
///
/// # Errors
/// As [`check`].
pub fn check_now(phase: &'static str) -> Result<(), Interrupted> {
    CURRENT.with(|c| c.borrow().as_ref().map_or(Ok(()), |w| w.poll(phase)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_watch_never_interrupts() {
        assert!(Watch::new(None, None, None).is_none());
        for _ in 0..1000 {
            check("test").unwrap();
        }
    }

    #[test]
    fn a_cancelled_token_interrupts_within_check_every_calls() {
        let token = CancelToken::new();
        let watch = Watch::new(None, Some(token.clone()), None).unwrap();
        let calls = watch.run(|| {
            token.cancel();
            (1..=2 * CHECK_EVERY).find(|_| check("lowering").is_err())
        });
        assert!(calls.is_some_and(|n| n <= CHECK_EVERY));
        assert_eq!(watch.tripped(), Some(Interrupted { reason: InterruptReason::Cancelled, phase: "lowering" }));
        // Uninstalled afterwards.
        check_now("after").unwrap();
    }

    #[test]
    fn check_at_polls_every_poll_every_iterations() {
        let token = CancelToken::new();
        let watch = Watch::new(None, Some(token.clone()), None).unwrap();
        token.cancel();
        let first = watch.run(|| (1..=2 * POLL_EVERY).find(|&i| check_at(i, "pass").is_err()));
        assert_eq!(first, Some(POLL_EVERY));
    }

    #[test]
    fn a_deadline_interrupts_with_its_limit_and_the_first_phase() {
        let watch = Watch::new(Some(Duration::ZERO), None, None).unwrap();
        let first = watch.run(|| check_now("first").unwrap_err());
        assert_eq!(first.reason, InterruptReason::Timeout(Duration::ZERO));
        assert_eq!(watch.poll("second").unwrap_err().phase, "first");
        assert!(first.to_string().contains("timed out"));
    }

    #[test]
    fn a_byte_budget_trips_once_the_charges_pass_it_and_stays_tripped() {
        let watch = Watch::new(None, None, Some(100)).unwrap();
        watch.run(|| {
            charge_bytes(60, "Thompson construction").unwrap();
            charge_bytes(40, "Thompson construction").unwrap();
            let e = charge_bytes(1, "epsilon removal").unwrap_err();
            assert_eq!((e.reason, e.phase), (InterruptReason::TooLarge(100), "epsilon removal"));
            assert!(e.to_string().contains("max_compile_bytes"), "{e}");
            assert_eq!(check_now("later").unwrap_err(), e, "the first interruption is kept");
        });
        assert_eq!(watch.bytes_charged(), 101);
        watch.record_bytes();
        assert_eq!(last_compile_bytes(), 101);
        charge_bytes(1 << 40, "no watch").unwrap();
    }

    #[test]
    fn a_panic_inside_run_restores_the_previous_watch() {
        let watch = Watch::new(None, Some(CancelToken::new()), None).unwrap();
        let _ = std::panic::catch_unwind(|| watch.run(|| panic!("boom")));
        assert!(current().is_none());
    }
}
