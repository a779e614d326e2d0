//! The parser a matcher runs: the Earley parser or the PDA, as an enum (one predictable branch
//! per call, no virtual call in the hot path).
//!
//! Both read bytes, pop bytes, say whether the input is complete and which automaton states can
//! read next, which is all the matcher, the mask and the oracle need. A PDA whose threads
//! overflow (an ambiguity it does not serve well, see `crate::pda`) is replaced by an Earley
//! parser that replays its bytes, in the middle of a call if need be: the answer stays exact.
//!
//! Both carry the call's [`StepBudget`]; the replacing Earley parser takes over the PDA's, so
//! the replay is paid from the budget of the call that triggers it, like any other work of
//! that call (a replay the budget cannot pay leaves the PDA as it was, the budget exceeded).

use crate::compiled::{CompiledGrammar, Parser as ParserKind};
use crate::earley::Parser;
use crate::fsm::{RuleKind, StateId};
use crate::pda::Pda;
use crate::util::budget::StepBudget;

/// The largest Earley set whose configuration keys verdicts: writing and comparing a key costs
/// three words per item at every fill, which a set this large does not repay.
const MAX_CONFIGURATION_ITEMS: usize = 1024;

/// A matcher's parser (see the module documentation).
#[derive(Clone, Debug)]
pub(crate) enum Engine {
    /// The Earley parser.
    Earley(Parser),
    /// The pushdown automaton.
    Pda(Pda),
}

impl Engine {
    /// The parser `grammar` asks for, at its start.
    pub fn new(grammar: &CompiledGrammar) -> Self {
        let fsm = grammar.fsm().clone();
        match grammar.parser() {
            ParserKind::Pda => {
                let pda = Pda::new(fsm);
                if pda.overflowed() {
                    Engine::Earley(Parser::new(pda.fsm().clone()))
                } else {
                    Engine::Pda(pda)
                }
            }
            ParserKind::Earley | ParserKind::Auto => Engine::Earley(Parser::new(fsm)),
        }
    }

    /// The Earley parser, if this is one.
    pub fn earley(&self) -> Option<&Parser> {
        match self {
            Engine::Earley(p) => Some(p),
            Engine::Pda(_) => None,
        }
    }

    /// The bytes that can be popped.
    #[inline]
    pub fn byte_len(&self) -> usize {
        match self {
            Engine::Earley(p) => p.byte_len(),
            Engine::Pda(p) => p.byte_len(),
        }
    }

    /// Writes the current configuration into `out` ([`Pda::configuration`],
    /// [`Parser::configuration`]) and returns `true`; `false` for an Earley set of more than
    /// [`MAX_CONFIGURATION_ITEMS`] items. The keys name frame ids or chart positions, valid
    /// until a rollback or a compaction.
    ///
    /// `reach` says how many bytes the checks read at most (the Earley parser's counts are
    /// keyed by it); the PDA, which has no counts, does not ask.
    pub fn configuration(&self, out: &mut Vec<u32>, reach: impl FnOnce() -> u32) -> bool {
        match self {
            Engine::Earley(p) => p.configuration(out, MAX_CONFIGURATION_ITEMS, reach()),
            Engine::Pda(p) => {
                p.configuration(out);
                true
            }
        }
    }

    /// For the PDA, writes its configuration by content into `out`
    /// ([`Pda::configuration_content`], at most `max_len` words) and returns `true`; `false`
    /// for the Earley parser and for a longer configuration.
    pub fn configuration_content(&self, out: &mut Vec<u32>, max_len: usize) -> bool {
        match self {
            Engine::Earley(_) => false,
            Engine::Pda(p) => p.configuration_content(out, max_len),
        }
    }

    /// For the PDA, starts recording the frames the next bytes pop ([`Pda::record_pops`]).
    pub fn record_pops(&mut self) {
        if let Engine::Pda(p) = self {
            p.record_pops();
        }
    }

    /// For the PDA, writes its configuration cut to the frames popped since
    /// [`Engine::record_pops`] ([`Pda::popped_content`]) and returns `true`; `false` for the
    /// Earley parser (which may have replaced the PDA since) and for a longer configuration.
    pub fn popped_content(&self, out: &mut Vec<u32>, max_len: usize) -> bool {
        match self {
            Engine::Earley(_) => false,
            Engine::Pda(p) => p.popped_content(out, max_len),
        }
    }

    /// The items of the current position: Earley items, or PDA threads.
    pub fn current_len(&self) -> usize {
        match self {
            Engine::Earley(p) => p.current_items().len(),
            Engine::Pda(p) => p.thread_count(),
        }
    }

    /// Whether the input so far is a complete match.
    #[inline]
    pub fn is_accepting(&self) -> bool {
        match self {
            Engine::Earley(p) => p.is_accepting(),
            Engine::Pda(p) => p.is_accepting(),
        }
    }

    /// Consumes one byte; `false`, leaving the state unchanged, when it is rejected.
    pub fn advance_byte(&mut self, b: u8) -> bool {
        self.advance_bytes(&[b]) == 1
    }

    /// Consumes bytes until one is rejected or the work budget runs out; returns how many were
    /// consumed.
    pub fn advance_bytes(&mut self, bytes: &[u8]) -> usize {
        match self {
            Engine::Earley(p) => p.advance_bytes(bytes),
            Engine::Pda(p) => {
                let n = p.advance_bytes(bytes);
                if !p.overflowed() || !self.hand_over_to_earley() {
                    return n;
                }
                n + self.advance_bytes(&bytes[n..])
            }
        }
    }

    /// Replaces a PDA by an Earley parser in the same state: its bytes replayed, and as many
    /// positions as the PDA can pop. The replay runs on the PDA's work budget; when that runs
    /// out, the PDA stays (its budget marked exceeded) and this returns `false`.
    fn hand_over_to_earley(&mut self) -> bool {
        let Engine::Pda(pda) = self else { return true };
        let mut parser = Parser::new(pda.fsm().clone());
        parser.set_budget(pda.budget());
        let read = parser.advance_bytes(pda.bytes());
        if read < pda.bytes().len() {
            debug_assert!(parser.budget().exceeded(), "the PDA and the Earley parser accept the same bytes");
            pda.set_budget(parser.budget());
            return false;
        }
        parser.compact(pda.byte_len());
        *self = Engine::Earley(parser);
        true
    }

    /// Replaces the work budget of the parser (see `crate::util::budget`).
    pub fn set_budget(&mut self, budget: StepBudget) {
        match self {
            Engine::Earley(p) => p.set_budget(budget),
            Engine::Pda(p) => p.set_budget(budget),
        }
    }

    /// The parser's work budget: the visits counted since it was set, and whether it ran out.
    pub fn budget(&self) -> StepBudget {
        match self {
            Engine::Earley(p) => p.budget(),
            Engine::Pda(p) => p.budget(),
        }
    }

    /// The bytes the parser's state holds (see `Parser::state_bytes`, `Pda::state_bytes`).
    pub fn state_bytes(&self) -> usize {
        match self {
            Engine::Earley(p) => p.state_bytes(),
            Engine::Pda(p) => p.state_bytes(),
        }
    }

    /// Undoes the last `n` consumed bytes (at most [`Engine::byte_len`]).
    pub fn pop_bytes(&mut self, n: usize) {
        match self {
            Engine::Earley(p) => p.pop_bytes(n),
            Engine::Pda(p) => p.pop_bytes(n),
        }
    }

    /// The bytes some state can read next, as a 256-bit set.
    pub fn next_bytes(&self) -> [u64; 4] {
        match self {
            Engine::Earley(p) => p.next_bytes(),
            Engine::Pda(p) => p.next_bytes(),
        }
    }

    /// Forgets what rollbacks of more than `keep` bytes would need.
    pub fn compact(&mut self, keep: usize) {
        match self {
            Engine::Earley(p) => {
                p.compact(keep);
            }
            Engine::Pda(p) => {
                p.compact(keep);
            }
        }
    }

    /// Whether some current state can read a token by id (never for the PDA: it does not serve
    /// grammars with token-level elements).
    pub fn reads_token(&self) -> bool {
        match self {
            Engine::Earley(p) => p.current_items().iter().any(|it| p.fsm().reads_token(it.state)),
            Engine::Pda(_) => false,
        }
    }

    /// Calls `f` on every current state that can read a byte, with the state's repetition
    /// budget and whether its count is below the minimum (see [`StateUse`]).
    pub fn for_each_scannable(&self, mut f: impl FnMut(StateUse)) {
        match self {
            Engine::Earley(p) => {
                let fsm = p.fsm();
                for it in p.current_items() {
                    if fsm.byte_edges(it.state).is_empty() {
                        continue;
                    }
                    let (below_min, budget) = match fsm.rule(fsm.rule_of(it.state)).kind {
                        // A token of n bytes may loop n times (once before its first byte when
                        // the item sits where an iteration can end), and a loop needs
                        // `count + 1 < max`.
                        RuleKind::Counted { min, max } => (
                            it.count < min,
                            if max == u32::MAX { u32::MAX } else { max.saturating_sub(it.count).saturating_sub(1) },
                        ),
                        RuleKind::Plain => (false, u32::MAX),
                    };
                    f(StateUse { state: it.state, below_min, budget });
                }
            }
            // Only scannable threads are kept, and the PDA serves no counted repetition.
            Engine::Pda(p) => {
                p.current_states().for_each(|state| f(StateUse { state, below_min: false, budget: u32::MAX }))
            }
        }
    }

    /// Calls `f` on every current state that reads a token by id.
    pub fn for_each_token_state(&self, mut f: impl FnMut(StateId)) {
        if let Engine::Earley(p) = self {
            for it in p.current_items() {
                if p.fsm().reads_token(it.state) {
                    f(it.state);
                }
            }
        }
    }
}

/// A current state that can read a byte, as the mask needs it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StateUse {
    /// The automaton state.
    pub state: StateId,
    /// Whether the item's repetition count is below its minimum.
    pub below_min: bool,
    /// How many bytes a token may have and still be trusted from the entry's accepted set:
    /// the repetition budget (`u32::MAX` outside counted repetitions).
    pub budget: u32,
}
