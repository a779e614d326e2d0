//! Context expansion (XGrammar §3.2): rejecting, when an entry is built, the uncertain tokens
//! whose rest after the rule's end no context can read.
//!
//! A token is uncertain when it can only be read by leaving the rule part-way, and the byte
//! right after such an end may follow the rule ([`crate::fsm::lookahead`]). Here the whole
//! rest of the token is read, after each of its possible ends, by the grammar's
//! [`FollowAutomaton`] (what may follow the rule, the stack unknown); a token whose every rest
//! is refused cannot be read in any context and is rejected. The automaton over-approximates
//! every stack, so a rejection here is exact; the tokens it keeps are checked at run time as
//! before.
//!
//! The grammar-wide automaton makes the result depend on the whole grammar, not only on what
//! keys a pool entry: expansion therefore runs per grammar, on the entry the walk or the pool
//! gave, and its result is never stored in the pool.

use std::sync::Arc;

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

/// `entry` (the entry of `state` in its certain `context`) without the uncertain tokens no
/// context can read, or `None` when it keeps them all.
pub(super) fn expand(
    entry: &MaskEntry,
    fsm: &Arc<GrammarFsm>,
    follow: &FollowAutomaton,
    context: &[StateId],
    vocab: &Vocabulary,
    state: StateId,
) -> Option<MaskEntry> {
    // The rule whose end the isolated parser reports (see `Parser::isolated`).
    let outer = context.last().map_or(fsm.rule_of(state), |&q| fsm.rule_of(q));
    if entry.uncertain.is_empty() || !follow.can_read_after(fsm, outer) {
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
            // After each length at which the rule can end, the rest must follow the rule.
            let readable = (1..=held)
                .filter(|&j| parser.is_accepting_at(base + j))
                .any(|j| follow.may_follow_within(fsm, outer, &bytes[j..], &mut budget));
            if !readable {
                rejected.push(TokenId::from_u32(vocab.sorted_token_ids()[pos as usize]));
            }
            readable
        })
        .collect();
    if rejected.is_empty() {
        return None;
    }
    let accepted = match &entry.accepted {
        // The listed form names the rejected tokens: the new ones join it.
        AdaptiveTokenMask::Rejected(ids) => {
            let mut all: Vec<TokenId> = ids.iter().copied().chain(rejected).collect();
            all.sort_unstable();
            AdaptiveTokenMask::Rejected(all.into_boxed_slice())
        }
        // The others name the accepted tokens only: unchanged.
        other => other.clone(),
    };
    Some(MaskEntry { accepted, uncertain: kept })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::MaskCache;
    use crate::fsm::{build_grammar_fsm, FsmLimits, FsmRuleId};
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
}
