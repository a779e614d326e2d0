//! [`RuleFsmCache`]: finished rule automata shared across grammars, so that a rule built once
//! (a tool's parameter object, a string format, the untyped JSON value) is not determinized
//! and minimized again by the next grammar that contains it.
//!
//! # Key
//!
//! Thompson construction is cheap and deterministic; epsilon removal, subset construction and
//! minimization are what cost. So the key is the *Thompson automaton itself*, whose rule
//! references the builder has already renumbered by first appearance (`Rule(17)`, `Rule(4)` →
//! local `0`, `1`; see `fsm::build`): two rules whose automata differ only in the ids of the
//! rules they reference — the same tool schema in two requests — get the same key and share
//! one finished automaton, which keeps the local labels (each builder maps them back to its
//! own ids when it freezes the grammar). The key also covers the limits that change the result
//! (the subset-construction budgets). A hit returns exactly what the pipeline would have
//! produced (construction is a function of the automaton alone).
//!
//! The key is a 128-bit xxh3 of a full encoding of the automaton (states, finality, every edge),
//! so a collision would need two different automata to collide on 128 bits.
//!
//! # Bounds
//!
//! An LRU map ([`BoundedCache`]) under one `parking_lot` mutex, bounded by the total number of
//! states kept; an automaton larger than the whole budget is not kept. The lock is held for map
//! operations only, never while building.

use std::sync::Arc;

use parking_lot::Mutex;

use super::flat::FlatFsm;
use super::nfa::Nfa;
use super::Label;
use crate::util::bounded_cache::BoundedCache;
use crate::util::cancel::{self, Interrupted};

/// The bytes of a key's encoding hashed at a time (see `key`).
const KEY_CHUNK: usize = 1 << 16;

/// Counters of a [`RuleFsmCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleFsmCacheStats {
    /// Rule automata served from the cache.
    pub hits: u64,
    /// Rule automata built (and offered to the cache).
    pub misses: u64,
    /// Automata kept now.
    pub entries: usize,
    /// States kept now, over all automata.
    pub states: usize,
    /// Automata dropped to stay within the budget.
    pub evictions: u64,
}

/// Finished rule automata keyed by their Thompson automaton (see the `fsm::rule_cache`
/// module docs).
/// `Send + Sync`; a [`crate::GrammarCompiler`] owns one and its clones share it.
#[derive(Debug)]
pub struct RuleFsmCache {
    /// Weighed by states.
    inner: Mutex<BoundedCache<u128, Entry>>,
}

/// A finished automaton, its rule labels local (see the module docs).
type Entry = Arc<FlatFsm>;

// A panic while the lock is held cannot leave a half-updated entry behind: entries are whole
// `Arc`s inserted by one `insert`, and the counters are only advisory.
impl std::panic::RefUnwindSafe for RuleFsmCache {}
impl std::panic::UnwindSafe for RuleFsmCache {}

impl RuleFsmCache {
    /// A cache keeping at most `max_states` automaton states in all.
    pub fn new(max_states: usize) -> Self {
        RuleFsmCache { inner: Mutex::new(BoundedCache::by_weight(max_states, |fsm: &Entry| fsm.state_len())) }
    }

    /// The counters.
    pub fn stats(&self) -> RuleFsmCacheStats {
        let s = self.inner.lock().stats();
        RuleFsmCacheStats { hits: s.hits, misses: s.misses, entries: s.len, states: s.weight, evictions: s.evictions }
    }

    /// The finished automaton of the Thompson automaton `nfa` (rule labels local, see the
    /// module docs), from the cache or from `build` (which runs without the lock). `salt`
    /// covers the build options that change the result. A failed build (an interrupted
    /// compile) is returned and nothing is kept.
    ///
    /// # Errors
    /// `build`'s error, or [`Interrupted`] when the compile's watch trips while the key is
    /// computed (a pass over the whole automaton).
    pub(crate) fn get_or_build<E: From<Interrupted>>(
        &self,
        nfa: &Nfa,
        salt: &[u64],
        build: impl FnOnce(&Nfa) -> Result<FlatFsm, E>,
    ) -> Result<Arc<FlatFsm>, E> {
        let key = key(nfa, salt)?;
        if let Some(fsm) = self.inner.lock().get(&key) {
            return Ok(Arc::clone(fsm));
        }
        let built = Arc::new(build(nfa)?);
        let released = self.inner.lock().insert(key, Arc::clone(&built));
        drop(released);
        Ok(built)
    }
}

/// The 128-bit key of `nfa` (whose rule labels are local) and `salt`. Thompson construction is
/// deterministic, so the same rule gives the same states and the same edge order.
///
/// Small encodings (almost every rule) are hashed in one call; larger ones in chunks of
/// [`KEY_CHUNK`] bytes (a million-way enum's automaton is 200 MB of them), with a check of the
/// watch per chunk. Both give the same hash.
fn key(nfa: &Nfa, salt: &[u64]) -> Result<u128, Interrupted> {
    let size = 8 + 8 * salt.len() + nfa.state_len() + 13 * nfa.edges.len();
    let mut buf: Vec<u8> = Vec::with_capacity(size.min(KEY_CHUNK + 64));
    let mut hasher: Option<xxhash_rust::xxh3::Xxh3> = None;
    let mut flush = |buf: &mut Vec<u8>| -> Result<(), Interrupted> {
        if buf.len() >= KEY_CHUNK {
            hasher.get_or_insert_with(xxhash_rust::xxh3::Xxh3::new).update(buf);
            buf.clear();
            cancel::check_now("rule cache lookup")?;
        }
        Ok(())
    };
    for &s in salt {
        buf.extend_from_slice(&s.to_le_bytes());
    }
    buf.extend_from_slice(&(nfa.state_len() as u32).to_le_bytes());
    buf.extend_from_slice(&nfa.start.to_le_bytes());
    for finals in nfa.finals.chunks(KEY_CHUNK) {
        buf.extend(finals.iter().map(|&f| f as u8));
        flush(&mut buf)?;
    }
    for &(from, label, to) in &nfa.edges {
        // One fixed-size write per edge: from, a tag and up to 4 bytes of label, to.
        let mut word = [0u8; 13];
        word[..4].copy_from_slice(&from.to_le_bytes());
        match label {
            Label::Bytes(lo, hi) => word[5..7].copy_from_slice(&[lo, hi]),
            Label::Rule(r) => {
                word[4] = 1;
                word[5..9].copy_from_slice(&r.to_le_bytes());
            }
            Label::Epsilon => word[4] = 2,
        }
        word[9..].copy_from_slice(&to.to_le_bytes());
        buf.extend_from_slice(&word);
        flush(&mut buf)?;
    }
    Ok(match hasher {
        Some(mut hasher) => {
            hasher.update(&buf);
            hasher.digest128()
        }
        None => xxhash_rust::xxh3::xxh3_128(&buf),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(labels: &[Label]) -> Nfa {
        let mut f = Nfa::default();
        f.start = f.add_state();
        let mut cur = f.start;
        for &l in labels {
            let next = f.add_state();
            f.add_edge(cur, l, next);
            cur = next;
        }
        f.finals[cur as usize] = true;
        f
    }

    /// The automaton a build returns in these tests: the chain itself (its edges are in state
    /// order), flat.
    fn as_fsm(nfa: &Nfa) -> Result<FlatFsm, Interrupted> {
        let mut f = FlatFsm::default();
        for s in 0..nfa.state_len() as u32 {
            f.add_state(nfa.finals[s as usize]);
            for &(_, l, to) in nfa.edges.iter().filter(|e| e.0 == s) {
                f.push_edge(l, to);
            }
            f.end_state();
        }
        f.start = nfa.start;
        Ok(f)
    }

    #[test]
    fn the_same_structure_shares_one_entry() {
        let cache = RuleFsmCache::new(1_000);
        // What two grammars' builders hand in for rules referencing (7, 3, 7) and (40, 2, 40):
        // labels renumbered by first appearance.
        let a = chain(&[Label::Bytes(b'x', b'x'), Label::Rule(0), Label::Rule(1), Label::Rule(0)]);
        let built_a = cache.get_or_build(&a, &[1], as_fsm).unwrap();
        let built_b = cache
            .get_or_build(&a.clone(), &[1], |_| -> Result<FlatFsm, Interrupted> {
                panic!("the second grammar's rule is a hit")
            })
            .unwrap();
        assert!(Arc::ptr_eq(&built_a, &built_b));
        assert_eq!(*built_a, as_fsm(&a).unwrap());
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
    }

    #[test]
    fn different_structure_or_salt_is_a_miss() {
        let cache = RuleFsmCache::new(1_000);
        let a = chain(&[Label::Bytes(b'x', b'x'), Label::Rule(0), Label::Rule(1)]);
        // The two references are the same rule: another structure.
        let b = chain(&[Label::Bytes(b'x', b'x'), Label::Rule(0), Label::Rule(0)]);
        for (nfa, salt) in [(&a, 1), (&b, 1), (&a, 2)] {
            cache.get_or_build(nfa, &[salt], as_fsm).unwrap();
        }
        assert_eq!(cache.stats().misses, 3);
        assert_eq!(cache.stats().hits, 0);
    }

    #[test]
    fn the_state_budget_evicts_least_recently_used() {
        let cache = RuleFsmCache::new(8);
        let a = chain(&[Label::Bytes(b'a', b'a'); 4]); // 5 states
        let b = chain(&[Label::Bytes(b'b', b'b'); 4]);
        let big = chain(&[Label::Bytes(b'c', b'c'); 10]); // over the whole budget: not kept
        cache.get_or_build(&a, &[], as_fsm).unwrap();
        cache.get_or_build(&b, &[], as_fsm).unwrap();
        cache.get_or_build(&big, &[], as_fsm).unwrap();
        let s = cache.stats();
        assert_eq!((s.entries, s.states, s.evictions), (1, 5, 1));
        cache.get_or_build(&b, &[], |_| -> Result<FlatFsm, Interrupted> { panic!("b is the most recent") }).unwrap();
    }

    #[test]
    fn a_failed_build_is_not_kept() {
        let cache = RuleFsmCache::new(1_000);
        let a = chain(&[Label::Bytes(b'a', b'a')]);
        let cancelled = Interrupted { reason: cancel::InterruptReason::Cancelled, phase: "test" };
        assert!(cache.get_or_build(&a, &[], |_| Err(cancelled)).is_err());
        assert_eq!(cache.stats().entries, 0);
        // The next build of the same rule runs and is kept.
        cache.get_or_build(&a, &[], as_fsm).unwrap();
        assert_eq!((cache.stats().entries, cache.stats().misses), (1, 2));
    }
}
