//! Accepting, when an entry is built, the uncertain tokens whose rest after the rule's end
//! *every* context reads (context expansion, `expansion.rs`, settles the others it can).
//!
//! Every stack under which a rule ends holds one of the rule's callers, waiting at the return
//! state of its call. A rest that each of them reads from there, without leaving its own rule,
//! is therefore read whatever the stack is. Each rest is parsed once per caller, by an isolated
//! parser at the return state ([`Parser::isolated`]), and the answer is kept per rule for the
//! grammar's other entries.

use std::sync::{Arc, Mutex, PoisonError};

use crate::earley::Parser;
use crate::fsm::{FsmRuleId, GrammarFsm, RuleKind, StateId};
use crate::util::hash::FastMap;

/// What [`EveryCaller`]s learned about a grammar's rules, shared by its entries (the entries of
/// a rule's states meet the same rests), bounded: past [`MAX_KEPT_ANSWERS`] answers it starts
/// over.
#[derive(Debug, Default)]
pub(super) struct AnswerStore {
    kept: Mutex<KeptAnswers>,
}

#[derive(Debug, Default)]
struct KeptAnswers {
    rules: FastMap<FsmRuleId, RuleAnswers>,
    /// Answers and bytes held in all.
    answers: usize,
    bytes: usize,
}

/// Answers an [`AnswerStore`] keeps before it starts over: a few MiB at most.
const MAX_KEPT_ANSWERS: usize = 1 << 16;

/// Whether every caller of one rule reads each rest met so far.
#[derive(Debug, Default)]
struct RuleAnswers {
    by_rest: FastMap<Box<[u8]>, bool>,
    /// Heap bytes of the rests.
    bytes: usize,
}

impl RuleAnswers {
    fn memory_usage(&self) -> usize {
        self.bytes + self.by_rest.capacity() * std::mem::size_of::<(Box<[u8]>, bool)>()
    }
}

impl AnswerStore {
    /// Heap bytes used.
    pub(super) fn memory_usage(&self) -> usize {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.bytes + kept.rules.capacity() * std::mem::size_of::<(FsmRuleId, RuleAnswers)>()
    }

    /// The answers kept for `rule`, taken out while an entry adds to them.
    fn take_answers(&self, rule: FsmRuleId) -> RuleAnswers {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let answers = kept.rules.remove(&rule).unwrap_or_default();
        kept.answers -= answers.by_rest.len();
        kept.bytes -= answers.memory_usage();
        answers
    }

    /// Keeps `answers` for `rule` again (an entry of the rule built meanwhile on another thread
    /// may have put its own: the later ones stay).
    fn keep_answers(&self, rule: FsmRuleId, answers: RuleAnswers) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.answers + answers.by_rest.len() > MAX_KEPT_ANSWERS {
            *kept = KeptAnswers::default();
        }
        kept.answers += answers.by_rest.len();
        kept.bytes += answers.memory_usage();
        if let Some(old) = kept.rules.insert(rule, answers) {
            kept.answers -= old.by_rest.len();
            kept.bytes -= old.memory_usage();
        }
    }
}

/// Callers a rule may have for [`EveryCaller`]: each rest is parsed once per caller.
const MAX_CALLERS: usize = 16;
/// Bytes the callers' parsers may read for one entry (about 1–2 ms), past which the answers
/// not kept yet are "no": the tokens stay uncertain, checked at run time as before. Entries
/// of the split parse a few hundred bytes at most; the bound is for a rule with thousands of
/// distinct rests.
const ENTRY_BYTES: usize = 16 * 1024;

/// Whether a rest is read after a rule's end *in every context*: by each of its callers, from
/// the return state of its call, inside the caller's own rule. Every stack under which the rule
/// ends holds one of these callers, so a token whose rest they all read is valid wherever the
/// entry is used: it is accepted instead of checked at every step (`}` plus a newline after a
/// number, read by every caller of a JSON value).
///
/// Only where the count of no repetition matters: every caller's rule is plain (an isolated
/// parser reads a counted rule as unbounded, so it may loop where the real count forbids it),
/// the entry's own rule is plain or a repetition without a minimum (which may end at any
/// count), and the rule is not the root (whose end may be the end of the input, where nothing
/// more is read).
pub(super) struct EveryCaller<'e> {
    store: &'e AnswerStore,
    rule: FsmRuleId,
    /// The rule's answers so far (see [`AnswerStore::take_answers`]).
    answers: RuleAnswers,
    /// Per caller, its parser from the return state (made on first use) and the bytes it holds:
    /// consecutive rests share prefixes, as the uncertain tokens do.
    callers: Vec<CallerParser>,
    fsm: &'e Arc<GrammarFsm>,
    /// Bytes parsed for this entry (at most about [`ENTRY_BYTES`]).
    parsed: usize,
}

impl Drop for EveryCaller<'_> {
    fn drop(&mut self) {
        self.store.keep_answers(self.rule, std::mem::take(&mut self.answers));
    }
}

/// One caller's parser in [`EveryCaller`].
struct CallerParser {
    state: StateId,
    parser: Option<Parser>,
    held: Vec<u8>,
}

impl CallerParser {
    /// Whether the parser reads all of `rest`, counting the bytes it reads in `parsed`.
    fn reads(&mut self, fsm: &Arc<GrammarFsm>, rest: &[u8], parsed: &mut usize) -> bool {
        let parser = self.parser.get_or_insert_with(|| Parser::isolated(Arc::clone(fsm), self.state, &[]));
        let common = crate::tokenizer::common_prefix_len(&self.held, rest);
        parser.pop_bytes(self.held.len() - common);
        self.held.truncate(common);
        let read = parser.advance_bytes(&rest[common..]);
        *parsed += read;
        self.held.extend_from_slice(&rest[common..common + read]);
        self.held.len() == rest.len()
    }
}

impl<'e> EveryCaller<'e> {
    /// For the entries of `state` whose rule, or the outermost rule of its certain context,
    /// is `rule`, called with return states `returns` ([`crate::fsm::follow::FollowAutomaton::returns`]);
    /// `None` where it does not apply.
    pub(super) fn new(
        store: &'e AnswerStore,
        returns: &[StateId],
        fsm: &'e Arc<GrammarFsm>,
        state: StateId,
        rule: FsmRuleId,
    ) -> Option<Self> {
        let kind = |s: StateId| fsm.rule(fsm.rule_of(s)).kind;
        let plain = |s: StateId| matches!(kind(s), RuleKind::Plain);
        // A repetition without a minimum may end at any count; its loop-backs within the
        // token's prefix are bounded at run time as for every accepted token (`counted.rs`).
        let may_end = matches!(kind(state), RuleKind::Plain | RuleKind::Counted { min: 0, .. });
        let applies = rule != fsm.root()
            && !returns.is_empty()
            && returns.len() <= MAX_CALLERS
            && may_end
            && returns.iter().all(|&r| plain(r));
        applies.then(|| {
            let callers = returns.iter().map(|&state| CallerParser { state, parser: None, held: Vec::new() }).collect();
            EveryCaller { store, rule, answers: store.take_answers(rule), callers, fsm, parsed: 0 }
        })
    }

    /// Whether every caller reads all of `rest` (text); `false` when the entry's budget is spent
    /// before an answer is known.
    pub(super) fn reads(&mut self, rest: &[u8]) -> bool {
        if rest.is_empty() {
            return false;
        }
        if let Some(&known) = self.answers.by_rest.get(rest) {
            return known;
        }
        if self.parsed >= ENTRY_BYTES {
            return false;
        }
        let (fsm, parsed) = (self.fsm, &mut self.parsed);
        let all = self.callers.iter_mut().all(|caller| caller.reads(fsm, rest, parsed));
        if self.answers.by_rest.len() == MAX_KEPT_ANSWERS {
            self.answers = RuleAnswers::default();
        }
        self.answers.by_rest.insert(rest.into(), all);
        self.answers.bytes += rest.len();
        all
    }
}
