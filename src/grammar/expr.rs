//! Expression kinds of the grammar IR.
//!
//! A rule body is a small tree of [`Expr`] values. Terminals are byte strings and character
//! classes over Unicode code points; everything below the front-ends turns classes into UTF-8
//! byte ranges (tokens may split a code point, so the engine must work on bytes). Repetition
//! is kept as [`Expr::Repeat`] with its bounds, never unrolled here: the automaton builder
//! decides per case whether to expand a small repetition or keep a counter (XGrammar-2 §3.6).

crate::util::id::define_id! {
    /// The identifier of a rule inside one [`crate::Grammar`]: its index in
    /// [`crate::Grammar::rules`].
    pub struct RuleId;
}

/// The largest Unicode scalar value.
pub const MAX_CODE_POINT: u32 = 0x10FFFF;

/// A set of Unicode code points given as sorted, disjoint, non-adjacent inclusive ranges,
/// optionally negated (the complement within `U+0000..=U+10FFFF`).
///
/// The `negated` flag is kept rather than resolved so that the printer writes `[^"\\]` back
/// as the user wrote it; [`CharClass::resolved_ranges`] gives the actual set.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct CharClass {
    ranges: Vec<(u32, u32)>,
    negated: bool,
}

impl CharClass {
    /// A class from possibly unsorted, overlapping ranges; `lo > hi` ranges are dropped.
    pub fn new(ranges: impl IntoIterator<Item = (u32, u32)>, negated: bool) -> Self {
        CharClass { ranges: canonical(ranges.into_iter().collect()), negated }
    }
    /// The ranges as written (before negation).
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }
    /// Whether the class is negated.
    pub fn is_negated(&self) -> bool {
        self.negated
    }
    /// The code points the class matches, as sorted disjoint ranges.
    pub fn resolved_ranges(&self) -> Vec<(u32, u32)> {
        if !self.negated {
            return self.ranges.clone();
        }
        crate::util::ranges::complement(&self.ranges, MAX_CODE_POINT)
    }
    /// `resolved_ranges().len()` without building them (automaton size estimates and the
    /// emptiness check run on every class of every rule). The written ranges are canonical
    /// (sorted, disjoint, non-adjacent, within U+10FFFF), so a negated class has one
    /// range per gap: between ranges, and before the first and after the last unless they
    /// touch the ends.
    pub fn resolved_range_count(&self) -> usize {
        let r = &self.ranges;
        if !self.negated {
            return r.len();
        }
        match (r.first(), r.last()) {
            (Some(&(lo, _)), Some(&(_, hi))) => r.len() + 1 - usize::from(lo == 0) - usize::from(hi >= MAX_CODE_POINT),
            _ => 1,
        }
    }
    /// Whether the class matches no code point at all.
    pub fn is_empty(&self) -> bool {
        self.resolved_range_count() == 0
    }
}

fn canonical(ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    // Front-ends mostly pass ranges that are canonical already (sorted, within bounds, apart):
    // checking is cheaper than sorting them into a new vector, and gives the same ranges.
    let in_bounds = ranges.iter().all(|&(lo, hi)| lo <= hi && hi <= MAX_CODE_POINT);
    if in_bounds && ranges.windows(2).all(|w| w[0].1 + 1 < w[1].0) {
        return ranges;
    }
    crate::util::ranges::canonical(ranges, MAX_CODE_POINT)
}

/// One node of a rule body.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Expr {
    /// The empty string.
    Empty,
    /// A literal byte string (non-empty after normalization).
    Bytes(Vec<u8>),
    /// One code point from a class, matched as its UTF-8 bytes.
    Class(CharClass),
    /// A reference to another rule.
    Rule(RuleId),
    /// The items one after the other.
    Seq(Vec<Expr>),
    /// Any one of the alternatives.
    Choice(Vec<Expr>),
    /// The inner expression `min` to `max` times (`None`: unbounded).
    Repeat(Box<Repeat>),
    /// Exactly one token, identified by its id (not by its text), whose id is in the set.
    /// Tokenizer-specific: `Token(<|channel|>)`, `ExcludeToken(...)` in EBNF.
    Token(TokenSet),
    /// Free text that switches to a sub-grammar when a trigger appears (XGrammar-2 §3.2).
    TagDispatch(Box<TagDispatch>),
}

/// A set of token ids given as sorted, disjoint, non-adjacent inclusive ranges, optionally
/// negated (every token of the vocabulary except these).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct TokenSet {
    ranges: Vec<(u32, u32)>,
    negated: bool,
}

impl TokenSet {
    /// A set from possibly unsorted, overlapping ranges; `lo > hi` ranges are dropped.
    pub fn new(ranges: impl IntoIterator<Item = (u32, u32)>, negated: bool) -> Self {
        TokenSet { ranges: crate::util::ranges::canonical(ranges.into_iter().collect(), u32::MAX), negated }
    }
    /// The set of the given ids.
    pub fn of(ids: impl IntoIterator<Item = u32>) -> Self {
        TokenSet::new(ids.into_iter().map(|i| (i, i)), false)
    }
    /// The ranges as written (before negation).
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }
    /// Whether the set is negated (all tokens except `ranges`).
    pub fn is_negated(&self) -> bool {
        self.negated
    }
    /// Whether token `id` is in the set.
    pub fn contains(&self, id: u32) -> bool {
        let inside = self.ranges.iter().any(|&(lo, hi)| lo <= id && id <= hi);
        inside != self.negated
    }
}

/// What starts a tag of a [`TagDispatch`]: a string of the free text, or one token.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Trigger {
    /// The free text ends with these bytes.
    Text(Vec<u8>),
    /// This token (by id) is generated.
    Token(u32),
}

/// The payload of [`Expr::TagDispatch`], with XGrammar's semantics: free text is any UTF-8
/// text that contains no complete trigger and no complete exclude; when a trigger completes,
/// its body must match in full; afterwards free text resumes (`loop_after_dispatch`) or the
/// dispatch ends. The free text may end anywhere when `stop_eos` holds, and ends right after
/// one of `stop_strings` (which is part of the match).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct TagDispatch {
    /// The triggers, in order; `bodies[i]` follows `triggers[i]`.
    pub triggers: Vec<Trigger>,
    /// What must follow each trigger (usually a rule reference).
    pub bodies: Vec<Expr>,
    /// Strings or tokens the free text may not contain.
    pub excludes: Vec<Trigger>,
    /// Whether the free text may end anywhere (at the end of generation or of the enclosing
    /// rule).
    pub stop_eos: bool,
    /// Strings that end the dispatch; each is part of the match.
    pub stop_strings: Vec<Vec<u8>>,
    /// Whether free text resumes after a dispatched body (else the dispatch ends there).
    pub loop_after_dispatch: bool,
}

impl TagDispatch {
    /// Why the dispatch is malformed, if it is: a trigger listed in its own excludes (XGrammar
    /// refuses it; the free text could never complete the trigger, so its tag would be dead,
    /// and the printed grammar would not parse back). Checked by the IR's normalization, so
    /// every front-end and `GrammarBuilder` refuse it (`GrammarError::InvalidTagDispatch`).
    pub fn malformed(&self) -> Option<String> {
        let trigger = self.triggers.iter().find(|trigger| self.excludes.contains(trigger))?;
        let shown = match trigger {
            Trigger::Text(b) => format!("\"{}\"", String::from_utf8_lossy(b).escape_default()),
            Trigger::Token(id) => format!("token {id}"),
        };
        Some(format!("the trigger {shown} is also in its excludes"))
    }

    /// A dispatch over `(trigger, body)` pairs with XGrammar's defaults: `stop_eos = true`,
    /// no stop strings, no excludes, `loop_after_dispatch = true`.
    pub fn new(tags: impl IntoIterator<Item = (Trigger, Expr)>) -> Self {
        let (triggers, bodies) = tags.into_iter().unzip();
        TagDispatch {
            triggers,
            bodies,
            excludes: Vec::new(),
            stop_eos: true,
            stop_strings: Vec::new(),
            loop_after_dispatch: true,
        }
    }
    /// Whether the dispatch can end at all (else it matches no finite string unless a body
    /// never returns).
    pub fn can_end(&self) -> bool {
        self.stop_eos || !self.stop_strings.is_empty()
    }
}

/// The payload of [`Expr::Repeat`].
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Repeat {
    /// What is repeated.
    pub expr: Expr,
    /// The least number of repetitions.
    pub min: u32,
    /// The largest number of repetitions; `None` for no bound.
    pub max: Option<u32>,
}

impl Expr {
    /// A literal string.
    pub fn literal(s: impl AsRef<[u8]>) -> Expr {
        let b = s.as_ref();
        if b.is_empty() {
            Expr::Empty
        } else {
            Expr::Bytes(b.to_vec())
        }
    }
    /// A repetition `expr{min,max}`.
    pub fn repeat(expr: Expr, min: u32, max: Option<u32>) -> Expr {
        Expr::Repeat(Box::new(Repeat { expr, min, max }))
    }
    /// `expr*`.
    pub fn star(expr: Expr) -> Expr {
        Expr::repeat(expr, 0, None)
    }
    /// `expr+`.
    pub fn plus(expr: Expr) -> Expr {
        Expr::repeat(expr, 1, None)
    }
    /// `expr?`.
    pub fn opt(expr: Expr) -> Expr {
        Expr::repeat(expr, 0, Some(1))
    }
    /// A class of code-point ranges.
    pub fn class(ranges: impl IntoIterator<Item = (u32, u32)>, negated: bool) -> Expr {
        Expr::Class(CharClass::new(ranges, negated))
    }
    /// The direct children of this node.
    pub fn children(&self) -> &[Expr] {
        match self {
            Expr::Seq(v) | Expr::Choice(v) => v,
            Expr::Repeat(r) => std::slice::from_ref(&r.expr),
            Expr::TagDispatch(t) => &t.bodies,
            _ => &[],
        }
    }
    /// Calls `f` on every rule this expression references, in order of appearance.
    pub fn for_each_rule_ref(&self, f: &mut impl FnMut(RuleId)) {
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            if let Expr::Rule(r) = e {
                f(*r);
            }
            stack.extend(e.children().iter().rev());
        }
    }
    /// Whether the expression matches at least one string, given which rules do
    /// (`productive[r]` for rule `r`).
    pub fn is_productive(&self, productive: &[bool]) -> bool {
        match self {
            Expr::Empty | Expr::Bytes(_) => true,
            Expr::Class(c) => !c.is_empty(),
            Expr::Rule(r) => productive[r.index()],
            Expr::Seq(v) => v.iter().all(|x| x.is_productive(productive)),
            Expr::Choice(v) => v.iter().any(|x| x.is_productive(productive)),
            Expr::Repeat(r) => r.min == 0 || r.expr.is_productive(productive),
            Expr::Token(t) => t.is_negated() || !t.ranges().is_empty(),
            Expr::TagDispatch(t) => {
                t.can_end() || (!t.loop_after_dispatch && t.bodies.iter().any(|b| b.is_productive(productive)))
            }
        }
    }

    /// The nesting depth (a leaf has depth 1), computed without recursion.
    pub fn depth(&self) -> usize {
        self.depth_and_node_count().0
    }
    /// The number of nodes, computed without recursion.
    pub fn node_count(&self) -> usize {
        self.depth_and_node_count().1
    }

    /// Whether the expression has more than `n` nodes, counting no further than that (callers
    /// compare expressions of any size with small thresholds).
    pub fn has_more_nodes_than(&self, n: usize) -> bool {
        let mut count = 0;
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            count += 1;
            if count > n {
                return true;
            }
            stack.extend(e.children());
        }
        false
    }

    /// [`Expr::depth`] and [`Expr::node_count`] in one traversal, without recursion.
    pub fn depth_and_node_count(&self) -> (usize, usize) {
        let (mut depth, mut nodes) = (0, 0);
        let mut stack = vec![(self, 1usize)];
        while let Some((e, d)) = stack.pop() {
            depth = depth.max(d);
            nodes += 1;
            stack.extend(e.children().iter().map(|c| (c, d + 1)));
        }
        (depth, nodes)
    }
}

#[cfg(test)]
mod tests {
    use super::{CharClass, MAX_CODE_POINT};
    use proptest::prelude::*;

    proptest! {
        /// Counting the ranges of a class without resolving it gives the resolved count.
        #[test]
        fn resolved_range_count_matches_resolved_ranges(
            ranges in prop::collection::vec((0u32..0x110010, 0u32..300), 0..6),
            negated in any::<bool>(),
            edges in any::<(bool, bool)>(),
        ) {
            let mut ranges: Vec<(u32, u32)> = ranges.into_iter().map(|(lo, len)| (lo, lo.saturating_add(len))).collect();
            // Classes that touch either end of the code point range, where the count changes.
            if edges.0 {
                ranges.push((0, 5));
            }
            if edges.1 {
                ranges.push((MAX_CODE_POINT - 3, MAX_CODE_POINT));
            }
            let class = CharClass::new(ranges, negated);
            let resolved = class.resolved_ranges();
            prop_assert_eq!(class.resolved_range_count(), resolved.len());
            prop_assert_eq!(class.is_empty(), resolved.is_empty());
        }
    }

    #[test]
    fn has_more_nodes_than_agrees_with_the_count() {
        let leaf = || super::Expr::literal("a");
        let e = super::Expr::Seq(vec![leaf(), super::Expr::Choice(vec![leaf(), super::Expr::star(leaf())]), leaf()]);
        let n = e.node_count();
        assert_eq!(n, 7);
        for k in 0..10 {
            assert_eq!(e.has_more_nodes_than(k), n > k, "k = {k}");
        }
    }

    proptest! {
        /// Ranges that are canonical already are kept as they are, which is what the general
        /// canonicalization gives.
        #[test]
        fn canonical_ranges_are_kept(
            ranges in prop::collection::vec((0u32..0x110010, 0u32..3), 0..6),
        ) {
            let ranges: Vec<(u32, u32)> = ranges.into_iter().map(|(lo, len)| (lo, lo.saturating_add(len))).collect();
            let general = crate::util::ranges::canonical(ranges.clone(), MAX_CODE_POINT);
            prop_assert_eq!(super::canonical(ranges), general.clone());
            prop_assert_eq!(super::canonical(general.clone()), general);
        }
    }

    #[test]
    fn a_negated_class_of_every_code_point_is_empty() {
        assert!(CharClass::new([(0, MAX_CODE_POINT)], true).is_empty());
        assert!(CharClass::new([(0, 10), (11, MAX_CODE_POINT)], true).is_empty());
        assert!(!CharClass::new([(1, MAX_CODE_POINT)], true).is_empty());
    }
}
