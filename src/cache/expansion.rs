//! Context expansion (XGrammar §3.2): settling, when an entry is built, the uncertain tokens
//! whose rest after the rule's end no context can read (rejected) or every context reads
//! (accepted).
//!
//! A token is uncertain when it can only be read by leaving the rule part-way, and the byte
//! right after such an end may follow the rule ([`crate::fsm::lookahead`]). Here the whole
//! rest of the token is read, after each of its possible ends, by the grammar's
//! [`FollowAutomaton`] (what may follow the rule, the stack unknown); a token whose every rest
//! is refused cannot be read in any context and is rejected. The automaton over-approximates
//! every stack, so a rejection here is exact.
//!
//! The converse: a rest that each caller of the rule reads, from the return state of its call
//! and without leaving its own rule, is read in every context (`every_caller.rs`); such a token
//! is accepted (a JSON value's `}` plus a newline after a number). The tokens left are checked
//! at run time as before.
//!
//! Both depend on the whole grammar, not only on what keys a pool entry: expansion therefore
//! runs per grammar, on the entry the walk or the pool gave, and its result is never stored in
//! the pool.

use std::sync::Arc;

use super::every_caller::{AnswerStore, EveryCaller};
use super::{AdaptiveTokenMask, MaskEntry};
use crate::earley::Parser;
use crate::fsm::follow::{FollowAutomaton, ReadBudget};
use crate::fsm::{GrammarFsm, StateId};
use crate::tokenizer::Vocabulary;
use crate::util::id::TokenId;
use crate::util::sentinel::Sentinel;

/// States the follow-automaton readings of one entry may visit in all, and bytes its parser
/// may read: expansion is an optimization (a token it keeps is checked at run time anyway), so
/// an entry with tens of thousands of uncertain tokens (a one-character rule shared by every
/// step of a counted string) stops expanding instead of stalling the step that builds it. (A
/// visit costs 15–150 ns: 100,000 let one entry's expansion take 3 ms.)
const ENTRY_VISITS: usize = 32_768;
const ENTRY_PARSER_BYTES: usize = 64 * 1024;

/// Context expansion for one grammar: its [`FollowAutomaton`], and what [`EveryCaller`]
/// learned, shared by all its entries (the entries of a rule's states meet the same rests).
#[derive(Debug)]
pub(super) struct Expander {
    follow: FollowAutomaton,
    /// Per rule, whether every caller reads each rest met so far.
    read_by_all: AnswerStore,
}

impl Expander {
    pub(super) fn new(fsm: &GrammarFsm) -> Self {
        Expander { follow: FollowAutomaton::new(fsm), read_by_all: AnswerStore::default() }
    }

    /// Heap bytes used.
    pub(super) fn memory_usage(&self) -> usize {
        self.follow.memory_usage() + self.read_by_all.memory_usage()
    }

    /// `entry` (the entry of `state` in its certain `context`) without the uncertain tokens no
    /// context can read, and with those every context reads accepted (see `every_caller.rs`), or
    /// `None` when it keeps them all uncertain.
    pub(super) fn expand(
        &self,
        entry: &MaskEntry,
        fsm: &Arc<GrammarFsm>,
        context: &[StateId],
        vocab: &Vocabulary,
        state: StateId,
    ) -> Option<MaskEntry> {
        if entry.uncertain.is_empty() {
            return None;
        }
        let follow = &self.follow;
        // The rule whose end the isolated parser reports (see `Parser::isolated`).
        let outer = context.last().map_or(fsm.rule_of(state), |&q| fsm.rule_of(q));
        let rejects = follow.can_read_after(fsm, outer);
        let mut every_caller = EveryCaller::new(&self.read_by_all, follow.returns(outer), fsm, state, outer);
        if !rejects && every_caller.is_none() {
            return None;
        }
        let mut parser = Parser::isolated(Arc::clone(fsm), state, context);
        let base = parser.byte_len();
        let mut budget = ReadBudget::new(ENTRY_VISITS);
        let mut parser_bytes = 0;
        // Consecutive uncertain tokens (ascending sorted positions) share prefixes: the parser
        // keeps the common part.
        let mut prev: &[u8] = &[];
        let mut held = 0;
        let mut rejected = Vec::new();
        let mut accepted = Vec::new();
        let kept: Box<[u32]> = entry
            .uncertain
            .iter()
            .copied()
            .filter(|&pos| {
                if budget.is_spent() || parser_bytes > ENTRY_PARSER_BYTES {
                    return true;
                }
                let bytes = vocab.sorted_token_bytes(pos as usize);
                // The sentinel lead byte is never text (as in the walk, `build.rs`).
                let text = &bytes[..Sentinel::text_len(bytes)];
                let common = crate::tokenizer::common_prefix_len(prev, text).min(held);
                parser.pop_bytes(held - common);
                held = common + parser.advance_bytes(&text[common..]);
                parser_bytes += text.len() - common;
                prev = text;
                // The lengths after which the rule can end: the rest must follow the rule.
                let ends = (1..=held).filter(|&j| parser.is_accepting_at(base + j));
                let id = TokenId::from_u32(vocab.sorted_token_ids()[pos as usize]);
                // A rest every caller reads may follow the rule: asked first, it spares the
                // follow automaton's reading.
                let whole_text = text.len() == bytes.len();
                let read_by_all = every_caller
                    .as_mut()
                    .is_some_and(|every| whole_text && ends.clone().any(|j| every.reads(&text[j..])));
                if read_by_all {
                    accepted.push(id);
                    return false;
                }
                if rejects && !ends.clone().any(|j| follow.may_follow_within(fsm, outer, &bytes[j..], &mut budget)) {
                    rejected.push(id);
                    return false;
                }
                true
            })
            .collect();
        if rejected.is_empty() && accepted.is_empty() {
            return None;
        }
        Some(MaskEntry { accepted: with_changes(&entry.accepted, rejected, accepted), uncertain: kept })
    }
}

/// `accepted` with the formerly uncertain tokens `rejected` and `newly` moved out of the
/// uncertain list.
fn with_changes(accepted: &AdaptiveTokenMask, rejected: Vec<TokenId>, newly: Vec<TokenId>) -> AdaptiveTokenMask {
    match accepted {
        // The listed form names the rejected tokens: the new ones join it; a token no longer
        // uncertain and not listed is accepted.
        AdaptiveTokenMask::Rejected(ids) => AdaptiveTokenMask::Rejected(merged(ids, rejected)),
        AdaptiveTokenMask::Accepted(ids) => AdaptiveTokenMask::Accepted(merged(ids, newly)),
        AdaptiveTokenMask::Bitset(words) => {
            let mut words = words.clone();
            for id in newly {
                words[id.word()] |= id.bit();
            }
            AdaptiveTokenMask::Bitset(words)
        }
    }
}

/// The ids of ascending `list` and of `more` (disjoint from it, in any order), ascending.
fn merged(list: &[TokenId], mut more: Vec<TokenId>) -> Box<[TokenId]> {
    if more.is_empty() {
        return list.into();
    }
    more.sort_unstable();
    let mut all = Vec::with_capacity(list.len() + more.len());
    let mut rest = list;
    for id in more {
        let before = rest.partition_point(|&x| x < id);
        all.extend_from_slice(&rest[..before]);
        all.push(id);
        rest = &rest[before..];
    }
    all.extend_from_slice(rest);
    all.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::MaskCache;
    use crate::fsm::{build_grammar_fsm, FsmLimits, FsmRuleId, RuleKind};
    use crate::tokenizer::VocabularyBuilder;

    #[test]
    fn rejects_the_tokens_whose_rest_no_caller_reads() {
        let g = crate::parse_ebnf(
            r#"root ::= "[" item "]" | "{" item ";" "}"
            item ::= [a-z]+"#,
            "root",
        )
        .unwrap();
        // `item` kept as a rule with two callers: it has no certain context.
        let limits = FsmLimits { max_inline_states: 0, ..FsmLimits::default() };
        let fsm = Arc::new(build_grammar_fsm(&g, &limits).unwrap());
        let vocab = VocabularyBuilder::new().tokens(["a", "a]", "a]]", "a;}", "a;;", "a}"]).build().unwrap();
        let item = fsm.rules().iter().position(|r| r.name == "item").unwrap();
        let state = fsm.rule(FsmRuleId::new(item)).start;
        let entry = MaskCache::new(&fsm, None).entry(&fsm, &vocab, state, false).clone();
        let text = |p: &u32| vocab.token_text_lossy(vocab.sorted_token_ids()[*p as usize]);
        // `a}` fails the one-byte follow set; `a]]` and `a;;` pass it but no caller reads the
        // second byte.
        assert_eq!(entry.uncertain.iter().map(text).collect::<Vec<_>>(), ["a;}", "a]"]);
    }

    /// The entry of the start state of rule `rule` (kept as a rule, repetitions counted), and
    /// the vocabulary it was built for.
    fn start_entry(grammar: &str, rule: &str, tokens: &[&str]) -> (MaskEntry, crate::tokenizer::Vocabulary) {
        let g = crate::parse_ebnf(grammar, "root").unwrap();
        let limits = FsmLimits { max_inline_states: 0, max_expanded_repeat: 0, ..FsmLimits::default() };
        let fsm = Arc::new(build_grammar_fsm(&g, &limits).unwrap());
        let vocab = VocabularyBuilder::new().tokens(tokens.iter().copied()).build().unwrap();
        let rule = fsm.rules().iter().position(|r| r.name == rule).unwrap();
        let state = fsm.rule(FsmRuleId::new(rule)).start;
        let entry = MaskCache::new(&fsm, None).entry(&fsm, &vocab, state, false).as_ref().clone();
        (entry, vocab)
    }

    /// The texts of the tokens `entry` accepts, and of those it leaves uncertain.
    fn split(entry: &MaskEntry, vocab: &crate::tokenizer::Vocabulary) -> (Vec<String>, Vec<String>) {
        let text = |id: u32| vocab.token_text_lossy(id).into_owned();
        let uncertain: Vec<u32> = entry.uncertain.iter().map(|&p| vocab.sorted_token_ids()[p as usize]).collect();
        let accepted: Vec<String> = (0..vocab.vocab_size() as u32)
            .filter(|id| match &entry.accepted {
                AdaptiveTokenMask::Accepted(ids) => ids.contains(&TokenId::from_u32(*id)),
                AdaptiveTokenMask::Rejected(ids) => !ids.contains(&TokenId::from_u32(*id)) && !uncertain.contains(id),
                AdaptiveTokenMask::Bitset(words) => words[*id as usize / 32] >> (id % 32) & 1 == 1,
            })
            .map(text)
            .collect();
        let mut uncertain: Vec<String> = uncertain.into_iter().map(text).collect();
        uncertain.sort();
        (accepted, uncertain)
    }

    #[test]
    fn accepts_the_tokens_whose_rest_every_caller_reads() {
        let (entry, vocab) = start_entry(
            r#"root ::= "[" item " ;]" | "{" item " ;}"
            item ::= [a-z]+"#,
            "item",
            &["a", "a ", "a ;", "a ;]", "a;", "ab"],
        );
        // Both callers read ` ;` after `item`; only one reads ` ;]`; none reads `;`.
        let (accepted, uncertain) = split(&entry, &vocab);
        assert_eq!(accepted, ["a", "a ", "a ;", "ab"]);
        assert_eq!(uncertain, ["a ;]"]);
    }

    #[test]
    fn a_caller_in_a_counted_repetition_may_not_read_on() {
        // After `item` inside the repetition, `a` starts a new iteration only below its bound:
        // `ca` is valid after `(ac` but not after `(acac`.
        let (entry, vocab) = start_entry(
            r#"root ::= "(" ("a" item){1,2} ")" | "<" item "a>"
            item ::= [c]+"#,
            "item",
            &["c", "ca"],
        );
        assert_eq!(split(&entry, &vocab), (vec!["c".to_string()], vec!["ca".to_string()]));
    }

    #[test]
    fn the_root_may_end_the_input() {
        // `item` is also the root: after its end the input may end, and `x` is read only by the
        // other caller.
        let (entry, vocab) = start_entry(
            r#"root ::= [c]+ | "<" root "x>"
            "#,
            "root",
            &["c", "cx"],
        );
        assert_eq!(split(&entry, &vocab), (vec!["c".to_string()], vec!["cx".to_string()]));
    }

    #[test]
    fn a_repetition_ends_where_its_count_allows() {
        // `[c]{0,4}` may end at any count: `cx` is read by both callers after one `c`. At
        // `[c]{2,4}` the item's count decides whether `c` may end it: `cx` stays uncertain.
        let grammar = |min: u32| {
            format!(
                r#"root ::= "<" item "x>" | "(" item "x)"
                item ::= [c]{{{min},4}}"#
            )
        };
        let rules = |grammar: &str| {
            let g = crate::parse_ebnf(grammar, "root").unwrap();
            let limits = FsmLimits { max_inline_states: 0, max_expanded_repeat: 0, ..FsmLimits::default() };
            build_grammar_fsm(&g, &limits).unwrap().rules().iter().map(|r| (r.name.clone(), r.kind)).collect::<Vec<_>>()
        };
        let counted = |min: u32| {
            let names = rules(&grammar(min));
            names.into_iter().find(|(_, kind)| matches!(kind, RuleKind::Counted { .. })).unwrap().0
        };
        for (min, accepted, uncertain) in [(0, vec!["c", "cx"], vec![]), (2, vec!["c"], vec!["cx"])] {
            let (entry, vocab) = start_entry(&grammar(min), &counted(min), &["c", "cx"]);
            assert_eq!(
                split(&entry, &vocab),
                (accepted.into_iter().map(String::from).collect(), uncertain.into_iter().map(String::from).collect()),
                "min {min}"
            );
        }
    }
}
