//! The automaton of a [`TagDispatch`]: free text watched by an Aho-Corasick automaton, with
//! rule-reference edges into the tag bodies (XGrammar-2 §3.2). The only module that uses the
//! `aho-corasick` crate.
//!
//! # Semantics
//!
//! Free text is valid UTF-8 read byte by byte. The text patterns (text triggers, excludes and
//! stop strings) are compiled into one Aho-Corasick DFA with standard (overlapping) matches, so
//! that after every byte its state tells which patterns end there, inherited suffix matches
//! included (after `xab`, both `ab` and `b` end). When patterns end at a byte, in this order of
//! precedence:
//!
//! 1. some **trigger** ends: the free text stops and one of the bodies of the triggers that end
//!    there must follow in full (all of them are alternatives: overlapping triggers `ab` and
//!    `b` both complete on `ab`). After the body, free text starts afresh (the Aho-Corasick
//!    automaton at its root) when `loop_after_dispatch`, else the dispatch ends;
//! 2. else some **stop string** ends: the dispatch ends (the stop string is part of the match);
//! 3. else some **exclude** ends: the text is rejected.
//!
//! So free text never contains a complete trigger or exclude; a trigger that contains an
//! exclude, or extends another trigger (`ab` and `abc`: `ab` always fires first), can never
//! fire. The dispatch may end at a character boundary of the free text when `stop_eos` holds
//! (a partial trigger may be pending then), and right after a stop string.
//!
//! **Token triggers** are not part of the Aho-Corasick automaton: a token has no text, so it
//! cannot overlap text patterns. From every character boundary of the free text, the
//! [sentinel](crate::util::sentinel) of a trigger token dispatches to its body, whatever text
//! pattern was pending. Free text itself is read through the text of tokens only; a special
//! token is never free text, so **token excludes** need no automaton (they are kept in the IR
//! for the printer and for front-ends that lower token-level free text with
//! [`crate::grammar::Expr::Token`]).
//!
//! # States
//!
//! One state per reachable pair (Aho-Corasick state, UTF-8 decoding state); one *dispatch*
//! state per Aho-Corasick match state where triggers end (rule edges to the bodies); one state
//! per node of the trie of token-trigger sentinels; one final *exit* state. The automaton is
//! deterministic on bytes by construction and is not minimized: the mask cache relies on the
//! Aho-Corasick depth of each free-text state (see `DispatchFsm::free_depth` and
//! `cache/dispatch.rs`), which merging states would blur.

use aho_corasick::automaton::Automaton;
use aho_corasick::dfa::DFA;
use aho_corasick::{Anchored, MatchKind};

use super::{token, Fsm, Label};
use crate::grammar::{GrammarError, TagDispatch, Trigger};
use crate::util::hash::FastMap;
use crate::util::id::TokenId;
use crate::util::sentinel::Sentinel;

/// A dispatch automaton and, per state, the Aho-Corasick depth of free-text states at a
/// character boundary.
pub(super) struct DispatchFsm {
    /// The automaton.
    pub(super) fsm: Fsm,
    /// Per state: for a free-text state at a character boundary, the length of the pending
    /// pattern prefix (the Aho-Corasick state's depth); [`MID_CHAR`] for a free-text state
    /// inside a character; `u32::MAX` for every other state. After
    /// reading more bytes than that from such a state without meeting a pattern, the automaton
    /// is where it would be after reading the same bytes from the start state.
    pub(super) free_depth: Vec<u32>,
}

/// The depth recorded for free-text states inside a multi-byte character.
pub(crate) const MID_CHAR: u32 = u32::MAX - 1;

/// The most states one dispatch automaton may have (50 triggers of 30 bytes need ~1,600).
const MAX_DISPATCH_STATES: usize = 200_000;

/// What a text pattern of the Aho-Corasick automaton is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pattern {
    /// Trigger `i` (index into the dispatch's triggers).
    Trigger(usize),
    Stop,
    Exclude,
}

/// A UTF-8 decoding state: what the next byte may be.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Utf8 {
    /// At a character boundary.
    Boundary,
    /// `n` continuation bytes `80..=BF` to go.
    Cont(u8),
    /// After `E0`: `A0..=BF`, then one more.
    E0,
    /// After `ED`: `80..=9F` (no surrogates), then one more.
    Ed,
    /// After `F0`: `90..=BF`, then two more.
    F0,
    /// After `F4`: `80..=8F` (at most U+10FFFF), then two more.
    F4,
}

impl Utf8 {
    /// The state after byte `b`, if `b` may come next.
    fn next(self, b: u8) -> Option<Utf8> {
        use Utf8::*;
        match (self, b) {
            (Boundary, 0x00..=0x7F) => Some(Boundary),
            (Boundary, 0xC2..=0xDF) => Some(Cont(1)),
            (Boundary, 0xE0) => Some(E0),
            (Boundary, 0xE1..=0xEC | 0xEE..=0xEF) => Some(Cont(2)),
            (Boundary, 0xED) => Some(Ed),
            (Boundary, 0xF0) => Some(F0),
            (Boundary, 0xF1..=0xF3) => Some(Cont(3)),
            (Boundary, 0xF4) => Some(F4),
            (Cont(1), 0x80..=0xBF) => Some(Boundary),
            (Cont(n), 0x80..=0xBF) => Some(Cont(n - 1)),
            (E0, 0xA0..=0xBF) | (Ed, 0x80..=0x9F) => Some(Cont(1)),
            (F0, 0x90..=0xBF) | (F4, 0x80..=0x8F) => Some(Cont(2)),
            _ => None,
        }
    }
}

/// Builds the automaton of `t` whose trigger `i` is followed by a reference to rule
/// `bodies[i]`. `rule` names the rule for error messages.
///
/// # Errors
/// [`GrammarError::InvalidTagDispatch`] for an empty pattern, a pattern containing the byte
/// `0xFF` (reserved for token ids), or an automaton past the size limit.
pub(super) fn dispatch_fsm(t: &TagDispatch, bodies: &[u32], rule: &str) -> Result<DispatchFsm, GrammarError> {
    let invalid = |reason: String| GrammarError::InvalidTagDispatch { rule: rule.to_string(), reason };
    let mut patterns: Vec<&[u8]> = Vec::new();
    let mut kinds: Vec<Pattern> = Vec::new();
    let mut token_triggers: Vec<(u32, usize)> = Vec::new();
    let texts = t.triggers.iter().enumerate().map(|(i, x)| (x, Pattern::Trigger(i)));
    let stops = t.stop_strings.iter().map(|s| (s.as_slice(), Pattern::Stop));
    let excludes = t.excludes.iter().filter_map(|x| match x {
        Trigger::Text(b) => Some((b.as_slice(), Pattern::Exclude)),
        Trigger::Token(_) => None,
    });
    let text_triggers = texts.filter_map(|(x, p)| match x {
        Trigger::Text(b) => Some((b.as_slice(), p)),
        Trigger::Token(id) => {
            if let Pattern::Trigger(i) = p {
                token_triggers.push((*id, i));
            }
            None
        }
    });
    for (bytes, kind) in text_triggers.chain(stops).chain(excludes) {
        let what = match kind {
            Pattern::Trigger(_) => "trigger",
            Pattern::Stop => "stop string",
            Pattern::Exclude => "exclude",
        };
        if bytes.is_empty() {
            return Err(invalid(format!("an empty {what}")));
        }
        if !Sentinel::is_text(bytes) {
            return Err(invalid(format!("the {what} {:?} contains the byte 0xFF, reserved for token ids", bytes)));
        }
        patterns.push(bytes);
        kinds.push(kind);
    }
    for &(id, _) in &token_triggers {
        if !Sentinel::fits(id) {
            return Err(invalid(format!("token trigger {id} is not a token id")));
        }
    }
    let ac = DFA::builder()
        .match_kind(MatchKind::Standard)
        .build(&patterns)
        .map_err(|e| invalid(format!("the trigger automaton cannot be built: {e}")))?;
    Builder {
        t,
        bodies,
        ac: &ac,
        kinds: &kinds,
        fsm: Fsm::default(),
        ids: FastMap::default(),
        queue: Vec::new(),
        free_depth: Vec::new(),
        depth: trie_depths(&ac, &patterns),
    }
    .build(&token_triggers)
    .ok_or_else(|| invalid(format!("the automaton exceeds {MAX_DISPATCH_STATES} states")))
}

struct Builder<'a> {
    t: &'a TagDispatch,
    bodies: &'a [u32],
    ac: &'a DFA,
    kinds: &'a [Pattern],
    fsm: Fsm,
    /// Free-text states by (Aho-Corasick state, UTF-8 state); dispatch states by Aho-Corasick
    /// state with `Utf8::Boundary` never colliding because match states are never free text.
    ids: FastMap<(usize, Utf8), u32>,
    queue: Vec<(aho_corasick::automaton::StateID, Utf8, u32)>,
    /// See [`DispatchFsm::free_depth`]; filled for free-text states as they are created.
    free_depth: Vec<u32>,
    /// The depth of every Aho-Corasick state (the length of the pattern prefix it stands for).
    depth: FastMap<usize, u32>,
}

/// The depth of every state of `ac`: its states are the prefixes of the patterns, and reading a
/// prefix from the start leads to the prefix's own state.
fn trie_depths(ac: &DFA, patterns: &[&[u8]]) -> FastMap<usize, u32> {
    let root = ac.start_state(Anchored::No).expect("an unanchored automaton has a start state");
    let mut depth = FastMap::default();
    depth.insert(root.as_usize(), 0);
    for p in patterns {
        let mut s = root;
        for (k, &b) in p.iter().enumerate() {
            s = ac.next_state(Anchored::No, s, b);
            depth.insert(s.as_usize(), k as u32 + 1);
        }
    }
    depth
}

impl Builder<'_> {
    fn build(mut self, token_triggers: &[(u32, usize)]) -> Option<DispatchFsm> {
        let root = self.ac.start_state(Anchored::No).expect("an unanchored automaton has a start state");
        let start = self.fsm.add_state();
        self.fsm.start = start;
        self.ids.insert((root.as_usize(), Utf8::Boundary), start);
        self.fsm.finals[start as usize] = self.t.stop_eos;
        self.queue.push((root, Utf8::Boundary, start));
        let exit = self.fsm.add_state();
        self.fsm.finals[exit as usize] = true;
        let after_body = if self.t.loop_after_dispatch { start } else { exit };
        let tokens = self.token_trie(token_triggers, after_body);
        let mut targets: Vec<Option<u32>> = vec![None; 256];
        while let Some((ac_state, utf8, id)) = self.queue.pop() {
            if self.fsm.state_len() > MAX_DISPATCH_STATES {
                return None;
            }
            for b in 0..=255u8 {
                targets[b as usize] = match utf8.next(b) {
                    None => None,
                    Some(u) => self.target(ac_state, b, u, exit, after_body),
                };
            }
            let mut b = 0usize;
            while b < 256 {
                let Some(to) = targets[b] else {
                    b += 1;
                    continue;
                };
                let lo = b;
                while b + 1 < 256 && targets[b + 1] == Some(to) {
                    b += 1;
                }
                self.fsm.add_edge(id, Label::Bytes(lo as u8, b as u8), to);
                b += 1;
            }
            if utf8 == Utf8::Boundary {
                if let Some(t0) = tokens {
                    self.fsm.add_edge(id, token::LEAD_LABEL, t0);
                }
            }
        }
        for edges in self.fsm.edges.iter_mut() {
            edges.sort_unstable();
        }
        self.free_depth.resize(self.fsm.state_len(), u32::MAX);
        self.free_depth[start as usize] = 0;
        Some(DispatchFsm { fsm: self.fsm, free_depth: self.free_depth })
    }

    /// The state after reading `b` (whose UTF-8 state is `u`) from Aho-Corasick state `from`:
    /// a free-text state, a dispatch state, the exit, or `None` (an exclude ended).
    fn target(
        &mut self,
        from: aho_corasick::automaton::StateID,
        b: u8,
        u: Utf8,
        exit: u32,
        after_body: u32,
    ) -> Option<u32> {
        let to = self.ac.next_state(Anchored::No, from, b);
        if !self.ac.is_match(to) {
            let key = (to.as_usize(), u);
            if let Some(&id) = self.ids.get(&key) {
                return Some(id);
            }
            let id = self.fsm.add_state();
            self.fsm.finals[id as usize] = self.t.stop_eos && u == Utf8::Boundary;
            self.free_depth.resize(id as usize + 1, u32::MAX);
            self.free_depth[id as usize] = if u == Utf8::Boundary { self.depth[&to.as_usize()] } else { MID_CHAR };
            self.ids.insert(key, id);
            self.queue.push((to, u, id));
            return Some(id);
        }
        let ended: Vec<Pattern> =
            (0..self.ac.match_len(to)).map(|i| self.kinds[self.ac.match_pattern(to, i).as_usize()]).collect();
        let triggers: Vec<usize> =
            ended.iter().filter_map(|p| if let Pattern::Trigger(i) = p { Some(*i) } else { None }).collect();
        if !triggers.is_empty() {
            // Dispatch states are keyed by the match state with an impossible UTF-8 state.
            let key = (to.as_usize(), Utf8::Cont(0));
            if let Some(&id) = self.ids.get(&key) {
                return Some(id);
            }
            let id = self.fsm.add_state();
            self.ids.insert(key, id);
            let mut rules: Vec<u32> = triggers.iter().map(|&i| self.bodies[i]).collect();
            rules.sort_unstable();
            rules.dedup();
            for r in rules {
                self.fsm.add_edge(id, Label::Rule(r), after_body);
            }
            return Some(id);
        }
        if ended.contains(&Pattern::Stop) {
            return Some(exit);
        }
        None
    }

    /// The trie of the token triggers' sentinels after the lead byte; returns its root.
    fn token_trie(&mut self, token_triggers: &[(u32, usize)], after_body: u32) -> Option<u32> {
        if token_triggers.is_empty() {
            return None;
        }
        let root = self.fsm.add_state();
        let mut children: FastMap<(u32, u8), u32> = FastMap::default();
        for &(id, i) in token_triggers {
            let mut cur = root;
            for &d in Sentinel::encode(TokenId::from_u32(id)).digits() {
                cur = match children.get(&(cur, d)) {
                    Some(&next) => next,
                    None => {
                        let next = self.fsm.add_state();
                        self.fsm.add_edge(cur, Label::Bytes(d, d), next);
                        children.insert((cur, d), next);
                        next
                    }
                };
            }
            let edge = (Label::Rule(self.bodies[i]), after_body);
            if !self.fsm.edges[cur as usize].contains(&edge) {
                self.fsm.add_edge(cur, edge.0, edge.1);
            }
        }
        Some(root)
    }
}
