//! Building the cache entries of the next steps off the critical path (issue 14).
//!
//! A serving engine has the CPU to itself while the GPU runs the forward pass. Right after
//! `accept_token`, [`GrammarMatcher::prefetch`] explores the bytes the grammar allows next, a few
//! bytes deep, and lists the cache entries that the masks of the next steps may need and that
//! are not built yet; [`Prefetch::run`] builds them, on any thread: entries live in the compiled
//! grammar's memo, shared by every matcher and clone. Masks do not change (an entry is the same
//! whoever builds it first), and no fill waits for a prefetch: a fill that needs an entry being
//! built at that moment waits for that one build only, which it would otherwise do itself.
//!
//! The exploration runs the matcher's own parser forward and back (it is restored), grouping
//! the bytes that every item of a set treats alike, and does not expand a set whose entries it
//! has already seen; it stops after a fixed number of parser steps, so its cost is bounded
//! (tens of microseconds) whatever the grammar.

use super::engine::{Engine, StateUse};
use super::GrammarMatcher;
use crate::cache::EntrySlot;
use crate::compiled::CompiledGrammar;
use crate::fsm::GrammarFsm;
use crate::util::hash::FastSet;

/// At most this many bytes are read by one exploration, over all its paths.
const MAX_EXPLORED_BYTES: usize = 4096;

/// Cache entries to build ahead of the masks that need them: see [`GrammarMatcher::prefetch`].
/// `Send + Sync`: hand it to another thread.
#[derive(Clone, Debug)]
pub struct Prefetch {
    grammar: CompiledGrammar,
    /// Entries not built at exploration time, nearest first.
    slots: Vec<EntrySlot>,
}

impl Prefetch {
    /// How many entries it would build (fewer if another thread builds some first).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there is nothing to build.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The entries it would build, nearest first (for profiling programs that time them one
    /// by one).
    pub fn slots(&self) -> &[EntrySlot] {
        &self.slots
    }

    /// Builds the entries, nearest first; returns how many this call built.
    pub fn run(&self) -> usize {
        self.run_while(|| true)
    }

    /// Builds the entries nearest first while `keep_going()` returns `true` (asked before each
    /// one: a host stops a prefetch that a newer one has made stale); returns how many this call
    /// built.
    pub fn run_while(&self, mut keep_going: impl FnMut() -> bool) -> usize {
        let (fsm, vocab, cache) = (self.grammar.fsm(), self.grammar.vocabulary(), self.grammar.mask_cache());
        let mut built = 0;
        for slot in &self.slots {
            if !keep_going() {
                break;
            }
            if !cache.has_entry(fsm, slot.state, slot.below_min) {
                cache.entry(fsm, vocab, slot.state, slot.below_min);
                built += 1;
            }
        }
        built
    }
}

impl GrammarMatcher {
    /// The cache entries that the masks of the next steps may need and that are not built yet:
    /// those of every Earley set the grammar can reach within `max_bytes` bytes from here
    /// (nearest first). Call it after `accept_token` and run the result on another thread
    /// while the model computes the next logits. Empty once the matcher is terminated.
    ///
    /// ```
    /// use maskforge::{CompilerConfig, GrammarCompiler, GrammarMatcher, VocabularyBuilder};
    /// let vocab = VocabularyBuilder::new()
    ///     .tokens(["{", "}", "\"", "a", "\":", ",", "1", "</s>"])
    ///     .special(7)
    ///     .stop_tokens([7])
    ///     .build()?;
    /// let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
    /// let grammar = compiler.compile_builtin_json_grammar()?;
    /// let mut matcher = GrammarMatcher::new(&grammar);
    /// assert!(matcher.accept_token(0)); // `{`
    /// let prefetch = matcher.prefetch(4);
    /// assert!(!prefetch.is_empty());
    /// // While the model runs: build on another thread.
    /// let built = std::thread::scope(|s| s.spawn(|| prefetch.run()).join().unwrap());
    /// assert_eq!(built, prefetch.len());
    /// assert!(matcher.prefetch(4).is_empty(), "everything within 4 bytes is built");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefetch(&mut self, max_bytes: usize) -> Prefetch {
        let grammar = self.grammar.clone();
        let mut slots = Vec::new();
        if !self.terminated {
            let mut explorer = Explorer {
                fsm: grammar.fsm(),
                seen_sets: FastSet::default(),
                found: Vec::new(),
                budget: MAX_EXPLORED_BYTES,
            };
            // The walk reads bytes like a step: bounded by the same work budget, it lists what
            // it found before the budget ran out.
            self.begin_step();
            explorer.visit(&mut self.parser, 0, max_bytes);
            explorer.found.sort_by_key(|&(depth, slot)| (depth, slot.index()));
            let mut listed = FastSet::default();
            let cache = grammar.mask_cache();
            for (_, slot) in explorer.found {
                if listed.insert(slot.index()) && !cache.has_entry(grammar.fsm(), slot.state, slot.below_min) {
                    slots.push(slot);
                }
            }
        }
        Prefetch { grammar, slots }
    }
}

/// A depth-first walk over the bytes the grammar allows, collecting the entries of every set.
struct Explorer<'a> {
    fsm: &'a GrammarFsm,
    /// The entry lists of the sets expanded so far (a set whose entries were seen is not
    /// expanded again: what follows depends on more than its entries, but rarely).
    seen_sets: FastSet<Vec<usize>>,
    /// (depth, entry) of every set visited.
    found: Vec<(usize, EntrySlot)>,
    /// Bytes the walk may still read.
    budget: usize,
}

impl Explorer<'_> {
    fn visit(&mut self, parser: &mut Engine, depth: usize, max_depth: usize) {
        let mut entries: Vec<usize> = Vec::new();
        let mut states = Vec::new();
        parser.for_each_scannable(|StateUse { state, below_min, .. }| {
            let slot = EntrySlot { state, below_min };
            entries.push(slot.index());
            states.push(state);
            self.found.push((depth, slot));
        });
        entries.sort_unstable();
        entries.dedup();
        if depth == max_depth || !self.seen_sets.insert(entries) {
            return;
        }
        for b in byte_class_representatives(&states, self.fsm) {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            if parser.advance_byte(b) {
                self.visit(parser, depth + 1, max_depth);
                parser.pop_bytes(1);
            } else if parser.budget().exceeded() {
                self.budget = 0;
                return;
            }
        }
    }
}

/// One byte of each class of bytes that every item of the current set reads alike (the same
/// edges): the byte-range boundaries of their edges cut 0..=255 into such classes.
fn byte_class_representatives(states: &[crate::fsm::StateId], fsm: &GrammarFsm) -> Vec<u8> {
    let mut cuts: Vec<u16> = Vec::new();
    for &state in states {
        for e in fsm.byte_edges(state) {
            cuts.push(e.lo as u16);
            cuts.push(e.hi as u16 + 1);
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let allowed = fsm.next_bytes(states.iter().copied());
    cuts.iter()
        .filter(|&&c| c < 256)
        .map(|&c| c as u8)
        .filter(|&b| allowed[(b >> 6) as usize] >> (b & 63) & 1 == 1)
        .collect()
}
