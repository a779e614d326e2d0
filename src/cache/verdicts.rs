//! The verdicts of a fill's uncertain-token checks, kept per grammar by the part of the parser
//! configuration the checks read, for every matcher of the grammar.
//!
//! A matcher keeps its own recent verdicts by frame ids (`matcher/verdicts.rs`), which are
//! cheap to compare but mean nothing in another matcher. A serving engine runs many matchers
//! of one grammar (every request of a schema, every document of a JSON mode), and each one's
//! first fill in a configuration, such as the first key of an object, checked the same tokens
//! again: those fills were the warm path's slowest (10–30 µs at 128k tokens).
//!
//! Here a configuration is described by content: each thread's state and the return states of
//! its stack (`Pda::configuration_content`). The checks of a string's closing tokens (` ",`,
//! `"}`) read only the top frame or two, so the verdicts are kept under the configuration cut
//! below the frames the checks popped (`Pda::popped_content`): a first key at another depth
//! then finds the verdicts of the first, unless its checks read to the stack's end. This memo
//! does not read those lists: the caller groups them by a hash of the threads' states and
//! says, with a predicate (`pda::matches_cut_content`), whether a kept cut list matches its
//! configuration. The check list, a function of the states, is compared as a guard.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::util::bounded_cache::BoundedCache;

/// Bytes of verdicts one grammar keeps: about a thousand configurations of a few hundred checks.
const BUDGET_BYTES: usize = 1 << 20;

/// Cut configurations kept per group of states (the newest); a group holds more than one when
/// the checks of a state read deeper into some stacks than others.
const PER_STATES: usize = 8;

/// The verdicts of one cut configuration.
#[derive(Debug)]
struct Kept {
    /// The configuration cut to what the checks read (`Pda::popped_content`).
    cut: Box<[u32]>,
    /// The sorted positions (in the sorted vocabulary) the fill checked.
    checked: Box<[u32]>,
    /// The token ids the checks allowed, of those checked.
    allowed: Arc<[u32]>,
}

impl Kept {
    fn memory_usage(&self) -> usize {
        (self.cut.len() + self.checked.len() + self.allowed.len()) * 4 + std::mem::size_of::<Self>()
    }
}

/// The kept verdicts of one group of states, newest last. Replaced whole when one is added, so
/// that the cache's weights stay exact.
type Group = Arc<[Arc<Kept>]>;

/// A grammar's kept verdicts (see the module docs). `Send + Sync`: its matchers share it.
pub struct SharedVerdicts {
    /// (A std mutex: it is unwind-safe, and the map stays consistent if a holder panics.)
    groups: Mutex<BoundedCache<u64, Group>>,
    /// Lookups that found verdicts.
    found: AtomicU64,
}

impl std::fmt::Debug for SharedVerdicts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedVerdicts").field("groups", &*self.groups()).finish()
    }
}

impl Default for SharedVerdicts {
    fn default() -> Self {
        let weigh = |g: &Group| g.iter().map(|k| k.memory_usage()).sum();
        SharedVerdicts { groups: Mutex::new(BoundedCache::by_weight(BUDGET_BYTES, weigh)), found: AtomicU64::new(0) }
    }
}

impl SharedVerdicts {
    fn groups(&self) -> MutexGuard<'_, BoundedCache<u64, Group>> {
        self.groups.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The ids allowed by the checks of `checked` in a configuration of the group `states`
    /// (a hash of its states) whose cut list `matches` accepts, if kept.
    pub fn find(&self, states: u64, checked: &[u32], matches: impl Fn(&[u32]) -> bool) -> Option<Arc<[u32]>> {
        let group = self.groups().get_uncounted(&states)?.clone();
        let kept = group.iter().rev().find(|k| *k.checked == *checked && matches(&k.cut))?;
        self.found.fetch_add(1, Ordering::Relaxed);
        Some(kept.allowed.clone())
    }

    /// Keeps `allowed`, the ids allowed by the checks of `checked` in a configuration of the
    /// group `states` whose cut to what the checks read is `cut`.
    pub fn keep(&self, states: u64, cut: &[u32], checked: &[u32], allowed: Arc<[u32]>) {
        let kept = Arc::new(Kept { cut: cut.into(), checked: checked.into(), allowed });
        let key = states;
        let mut groups = self.groups();
        let old = groups.get_uncounted(&key).cloned().unwrap_or_else(|| Arc::new([]));
        let same = |k: &Arc<Kept>| k.cut == kept.cut && k.checked == kept.checked;
        let others = old.iter().filter(|k| !same(k)).cloned();
        let mut group: Vec<_> = others.collect();
        if group.len() == PER_STATES {
            group.remove(0);
        }
        group.push(kept);
        let released = groups.insert(key, group.into());
        drop(groups);
        drop(released);
    }

    /// Lookups that found verdicts, and the cut configurations kept now.
    pub fn counts(&self) -> (u64, u64) {
        let kept = self.groups().stats().inserts;
        (self.found.load(Ordering::Relaxed), kept)
    }

    /// Heap bytes of the kept verdicts.
    pub fn memory_usage(&self) -> usize {
        self.groups().stats().weight
    }
}
