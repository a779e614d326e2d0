//! Layer 1: the grammar IR shared by every front-end (EBNF, JSON Schema, regex, structural
//! tags) and consumed by the automaton builder.
//!
//! A [`Grammar`] is a list of named [`Rule`]s and a root. Each rule body is an [`Expr`] tree
//! over byte strings, Unicode character classes, rule references, sequences, choices and
//! bounded or unbounded repetition; a rule may end with a lookahead assertion (`(= ...)` in
//! EBNF). Grammars are built with [`GrammarBuilder`], whose `build` runs the passes in
//! `passes` (normalization, undefined-reference and empty-language checks, unreachable-rule
//! removal) so that every `Grammar` value is well formed. A `Grammar` is immutable and
//! cheap to clone (an `Arc` inside).
//!
//! Printing ([`std::fmt::Display`]) writes XGrammar-compatible EBNF that parses back to an
//! equal grammar.

mod attrs;
mod builder;
mod expr;
mod import;
pub(crate) mod passes;
mod print;
pub(crate) mod saved;

use std::sync::Arc;

use crate::util::byteset::ByteSet;

pub use attrs::RuleAttrs;
pub use builder::{GrammarBuilder, GrammarLimits};
pub use expr::{CharClass, Expr, Repeat, RuleId, TagDispatch, TokenSet, Trigger, MAX_CODE_POINT};
pub(crate) use import::rename as rename_rules;
pub use print::{escape_literal, write_expr};

/// One named rule: `name ::= body (= lookahead)`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Rule {
    /// The rule's name, unique in its grammar.
    pub name: String,
    /// What the rule matches.
    pub body: Expr,
    /// An assertion about what must follow the rule (`(= ...)` in EBNF), if any. maskforge
    /// treats it as XGrammar does: a statement by the grammar's author about the contexts the
    /// rule is used in, which the parser does not re-check. The mask cache only prunes with
    /// lookaheads it can prove from the grammar itself, so masks never depend on it.
    pub lookahead: Option<Expr>,
    /// The rule's attributes (`name[lazy] ::= ...`); none by default.
    pub attrs: RuleAttrs,
}

/// A well-formed grammar: every referenced rule is defined, every rule is reachable from the
/// root and matches at least one string.
///
/// # Example
/// ```
/// use maskforge::{Expr, GrammarBuilder};
/// let mut b = GrammarBuilder::new();
/// let root = b.rule("root");
/// let digit = b.rule("digit");
/// b.define(digit, Expr::class([('0' as u32, '9' as u32)], false), None)?;
/// b.define(root, Expr::plus(Expr::Rule(digit)), None)?;
/// let g = b.build("root")?;
/// assert_eq!(g.to_string(), "root ::= digit+\ndigit ::= [0-9]\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Grammar {
    inner: Arc<GrammarInner>,
}

struct GrammarInner {
    rules: Vec<Rule>,
    root: RuleId,
    /// Every byte of every literal (see [`Grammar::literal_bytes`]); derived from the rules, so
    /// left out of equality and hashing.
    literal_bytes: ByteSet,
}

impl PartialEq for GrammarInner {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root && self.rules == other.rules
    }
}

impl Eq for GrammarInner {}

impl std::hash::Hash for GrammarInner {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.rules.hash(state);
        self.root.hash(state);
    }
}

impl Grammar {
    pub(crate) fn from_parts(rules: Vec<Rule>, root: RuleId) -> Self {
        let literal_bytes = literal_bytes(&rules);
        Grammar::from_parts_with_literals(rules, root, literal_bytes)
    }
    /// `from_parts` for a pass that collected the literal bytes (a superset is allowed: the
    /// summary may only say "maybe").
    pub(crate) fn from_parts_with_literals(rules: Vec<Rule>, root: RuleId, literal_bytes: ByteSet) -> Self {
        debug_assert!(!{ literal_bytes }.union_with(&self::literal_bytes(&rules)), "a literal byte is missing");
        Grammar { inner: Arc::new(GrammarInner { rules, root, literal_bytes }) }
    }
    /// Every byte that occurs in a literal of the grammar (byte strings, `TagDispatch`
    /// triggers, excludes and stop strings, in bodies and lookaheads), possibly with more: a
    /// byte outside the set occurs in no literal. The special-token rewrite skips grammars
    /// where no special token's first byte occurs.
    pub fn literal_bytes(&self) -> ByteSet {
        self.inner.literal_bytes
    }
    /// All rules; a [`RuleId`] indexes this slice.
    pub fn rules(&self) -> &[Rule] {
        &self.inner.rules
    }
    /// The rule with id `id`.
    ///
    /// # Panics
    /// When `id` does not belong to this grammar.
    pub fn rule(&self, id: RuleId) -> &Rule {
        &self.inner.rules[id.index()]
    }
    /// The start rule.
    pub fn root(&self) -> RuleId {
        self.inner.root
    }
    /// The id of the rule named `name`.
    pub fn rule_by_name(&self, name: &str) -> Option<RuleId> {
        self.inner.rules.iter().position(|r| r.name == name).map(RuleId::new)
    }
}

/// The bytes of every literal of `rules` (one walk).
fn literal_bytes(rules: &[Rule]) -> ByteSet {
    let mut set = ByteSet::EMPTY;
    let mut add = |b: &[u8]| b.iter().for_each(|&x| set.insert(x));
    let mut stack: Vec<&Expr> = Vec::new();
    for rule in rules {
        stack.push(&rule.body);
        stack.extend(rule.lookahead.as_ref());
        while let Some(e) = stack.pop() {
            match e {
                Expr::Bytes(b) => add(b),
                Expr::TagDispatch(t) => {
                    for x in t.triggers.iter().chain(&t.excludes) {
                        if let Trigger::Text(b) = x {
                            add(b);
                        }
                    }
                    t.stop_strings.iter().for_each(|s| add(s));
                }
                _ => {}
            }
            stack.extend(e.children());
        }
    }
    set
}

impl std::fmt::Debug for Grammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Grammar(root={}, {} rules)\n{}", self.rule(self.root()).name, self.rules().len(), self)
    }
}

/// Why a grammar could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrammarError {
    /// A rule is referenced but never defined.
    #[error("rule `{name}` is referenced but never defined")]
    UndefinedRule {
        /// The rule's name.
        name: String,
    },
    /// A rule is defined twice.
    #[error("rule `{name}` is defined more than once")]
    DuplicateRule {
        /// The rule's name.
        name: String,
    },
    /// The requested root rule does not exist.
    #[error("the root rule `{name}` is not defined")]
    MissingRoot {
        /// The requested root name.
        name: String,
    },
    /// A rule can match no string at all (e.g. `a ::= "x" a` or an empty character class).
    #[error("rule `{name}` matches no string (its language is empty)")]
    EmptyLanguage {
        /// The rule's name.
        name: String,
    },
    /// A repetition whose lower bound exceeds its upper bound.
    #[error("repetition bounds {{{min},{max}}} in rule `{rule}`: the lower bound exceeds the upper bound")]
    InvalidRepeat {
        /// The rule's name.
        rule: String,
        /// The lower bound.
        min: u32,
        /// The upper bound.
        max: u32,
    },
    /// A literal contains the byte `0xFF`, which no UTF-8 text contains and which the automata
    /// reserve for token ids (see `util::sentinel`).
    #[error("rule `{rule}`: a literal contains the byte 0xFF, which is reserved for token ids")]
    ReservedByte {
        /// The rule's name.
        rule: String,
    },
    /// A `TagDispatch` that cannot be built.
    #[error("TagDispatch in rule `{rule}`: {reason}")]
    InvalidTagDispatch {
        /// The rule's name.
        rule: String,
        /// What is wrong.
        reason: String,
    },
    /// A rule attribute that cannot be enforced on this rule (see [`RuleAttrs`]).
    #[error("rule `{rule}`: the attribute `{attribute}` {reason}")]
    UnsupportedAttribute {
        /// The rule's name.
        rule: String,
        /// The attribute as written (`lazy`, `max_chars`, ...).
        attribute: &'static str,
        /// Why it cannot be enforced.
        reason: String,
    },
    /// A limit of [`GrammarLimits`] was exceeded.
    #[error("grammar too large: {what} is {actual}, the limit is {limit}")]
    TooLarge {
        /// Which quantity.
        what: &'static str,
        /// Its value.
        actual: usize,
        /// The limit.
        limit: usize,
    },
    /// The compile ran past its deadline or was cancelled (`CompilerConfig::compile_timeout`,
    /// `GrammarCompiler::with_cancel_token`).
    #[error(transparent)]
    Interrupted(#[from] crate::util::cancel::Interrupted),
}
