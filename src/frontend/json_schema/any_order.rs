//! Object members in any order ([`PropertyOrder::Any`](super::PropertyOrder::Any)).
//!
//! What has been written so far is the state of a small automaton, [`MemberStates`], and each
//! state is a rule listing the members that may come next:
//!
//! * up to [`MAX_ANY_ORDER`] declared properties, the set of properties written (2^n states):
//!   exact, no key twice;
//! * else, up to [`MAX_ANY_ORDER_REQUIRED`] required properties, the set of required ones
//!   written (2^k states); an optional key may appear twice;
//! * else, how many required properties were written (k+1 states); a required key written
//!   twice may also stand in for another one.
//!
//! The last two are reported as relaxations of `properties`. They only let through texts with a
//! repeated key: a JSON value has no duplicate keys, so every instance of the schema is still
//! accepted and every non-instance rejected. The limits are what keeps large schemas cheap:
//! with the sets of up to 6 properties and 8 required ones, the set rules were half of all
//! automaton states of MaskBench's largest schemas.
//!
//! The members that leave the state as it is (additional ones, and untracked optional ones)
//! are one `members` rule every state refers to, so their keys form one trie per object
//! instead of a copy per state.

use super::counter::Counter;
use super::lower::{choice, is_never, Lowerer};
use super::object::Prop;
use super::object_count::MAX_COUNTED_STATES;
use super::SchemaError;
use crate::grammar::{Expr, RuleId};

/// The most declared properties whose sets of written properties are tracked (no key twice).
const MAX_ANY_ORDER: usize = 3;

/// The most required properties whose sets of written ones are tracked; beyond, the required
/// properties written are counted.
const MAX_ANY_ORDER_REQUIRED: usize = 4;

/// The most members of an `enum`/`const` object value tracked as sets (2^n rules per value,
/// exact); beyond, they are counted. A value is one of a few alternatives rather than a schema
/// used everywhere, so it can afford more than an object schema.
const MAX_VALUE_SETS: usize = 6;

/// What writing a declared property does to the state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Effect {
    /// Adds this bit to the set (the property may not come again).
    Bit(u32),
    /// Counts one more required property written.
    Count,
    /// Nothing (an optional property that may repeat).
    Stay,
}

/// The automaton over "what has been written so far" (see the module docs). States are
/// numbered from 0, the start.
struct MemberStates {
    effects: Vec<Effect>,
    /// Sets: the bits that must all be set at the end, and how many bits there are.
    /// Counts: `bits` is 0 and `required` the number of required properties.
    required: u32,
    bits: u32,
}

impl MemberStates {
    /// The automaton of `props`, tracking sets of up to `max_required_sets` required properties.
    fn new(props: &[Prop], max_required_sets: usize) -> Self {
        let n_required = props.iter().filter(|p| p.required).count();
        let exact = props.len() <= MAX_ANY_ORDER;
        if !exact && n_required > max_required_sets {
            let effects = props.iter().map(|p| if p.required { Effect::Count } else { Effect::Stay }).collect();
            return MemberStates { effects, required: n_required as u32, bits: 0 };
        }
        let (mut effects, mut bits, mut required) = (Vec::with_capacity(props.len()), 0, 0);
        for p in props {
            if exact || p.required {
                required |= u32::from(p.required) << bits;
                effects.push(Effect::Bit(bits));
                bits += 1;
            } else {
                effects.push(Effect::Stay);
            }
        }
        MemberStates { effects, required, bits }
    }

    /// How many states there are.
    fn len(&self) -> u32 {
        if self.bits == 0 && self.effects.contains(&Effect::Count) {
            self.required + 1
        } else {
            1 << self.bits
        }
    }

    /// Whether the object may end in state `s`.
    fn accepting(&self, s: u32) -> bool {
        if self.effects.contains(&Effect::Count) {
            s == self.required
        } else {
            s & self.required == self.required
        }
    }

    /// Whether declared property `i` leaves every state as it is.
    fn stays(&self, i: usize) -> bool {
        self.effects[i] == Effect::Stay
    }

    /// The state after writing declared property `i` in state `s` (`None`: not allowed).
    fn next(&self, s: u32, i: usize) -> Option<u32> {
        match self.effects[i] {
            Effect::Bit(b) => (s & (1 << b) == 0).then_some(s | 1 << b),
            Effect::Count => (s < self.required).then_some(s + 1),
            Effect::Stay => Some(s),
        }
    }

    /// What this automaton lets through beyond the exact language, if anything.
    fn relaxation(&self, max_required_sets: usize) -> Option<String> {
        if self.effects.contains(&Effect::Count) {
            Some(format!(
                "more than {max_required_sets} required properties in any order: they are counted, so a \
                 repeated key may stand in for another (each occurrence is validated)"
            ))
        } else if self.effects.contains(&Effect::Stay) {
            Some(format!(
                "more than {MAX_ANY_ORDER} declared properties in any order: an optional key may appear \
                 twice (each occurrence is validated)"
            ))
        } else {
            None
        }
    }
}

/// Which members an any-order list holds, which decides its limits and how it is reported.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum MemberList {
    /// An object schema's members (reported as `properties`).
    Schema,
    /// The members of an `enum`/`const` object value, all required (reported as the keyword).
    Value(&'static str),
}

impl MemberList {
    /// The most required properties whose sets of written ones are tracked.
    fn max_required_sets(self) -> usize {
        match self {
            MemberList::Schema => MAX_ANY_ORDER_REQUIRED,
            MemberList::Value(_) => MAX_VALUE_SETS,
        }
    }
    fn keyword(self) -> &'static str {
        match self {
            MemberList::Schema => "properties",
            MemberList::Value(keyword) => keyword,
        }
    }
}

/// The parts of an any-order member list: the automaton, each declared member that changes
/// the state (a rule when many states use it; `Empty` for the others), and the members that
/// never change the state as one expression.
struct AnyOrderParts {
    states: MemberStates,
    members: Vec<Expr>,
    repeatable: Option<Expr>,
}

impl Lowerer<'_> {
    /// Members in any order (see the module docs), and whether the member count is enforced:
    /// with a `counter` it is, unless that takes too many rules (`false`; the caller reports
    /// `minProperties`/`maxProperties` as relaxed).
    pub(super) fn any_order(
        &mut self,
        props: Vec<Prop>,
        additional: Option<Expr>,
        level: u32,
        ptr: &str,
        counter: Option<Counter>,
        list: MemberList,
    ) -> Result<(Expr, bool), SchemaError> {
        let states = MemberStates::new(&props, list.max_required_sets());
        if let Some(why) = states.relaxation(list.max_required_sets()) {
            self.relax(list.keyword(), ptr, why)?;
        }
        // Members used from many states go through rules; the others are moved to the one
        // place that uses them.
        let mut members = Vec::with_capacity(props.len());
        let mut repeatable: Vec<Expr> = additional.into_iter().collect();
        for (i, p) in props.into_iter().enumerate() {
            if states.stays(i) {
                repeatable.push(p.member);
                members.push(Expr::Empty);
            } else if states.len() > 2 && p.member.has_more_nodes_than(8) {
                members.push(self.rule_for("member", p.member)?);
            } else {
                members.push(p.member);
            }
        }
        // Every state and the start refer to them: one rule unless tiny.
        let repeatable = match repeatable.len() {
            0 => None,
            1 if !repeatable[0].has_more_nodes_than(24) => repeatable.pop(),
            _ => Some(self.rule_for("members", choice(repeatable))?),
        };
        let parts = AnyOrderParts { states, members, repeatable };
        if let Some(counter) = counter {
            let rules = parts.states.len() as usize * (counter.cap() as usize + 1);
            if rules <= MAX_COUNTED_STATES && rules <= self.rules_left() {
                return Ok((self.member_rules(&parts, level, counter), true));
            }
        }
        // Not counting is counting nothing: a counter that stays at 0, one rule per state.
        let uncounted = Counter { min: 0, max: None };
        Ok((self.member_rules(&parts, level, uncounted), counter.is_none()))
    }

    /// One rule per (state, count): end here (if accepting and the count is enough), or a
    /// comma and a member that may come next.
    fn member_rules(&mut self, parts: &AnyOrderParts, level: u32, counter: Counter) -> Expr {
        let width = counter.cap() as usize + 1;
        let states = parts.states.len() as usize;
        let comma = self.layout.comma(level);
        let ids: Vec<RuleId> = (0..states * width).map(|_| self.new_rule("anyorder")).collect();
        let id = |s: u32, c: u32| Expr::Rule(ids[s as usize * width + c as usize]);
        // The members that may come in (s, c) (after a comma, except first).
        let moves = |s: u32, c: u32| -> Vec<Expr> {
            let mut alts = Vec::new();
            let Some(c2) = counter.step(c) else { return alts };
            if let Some(r) = &parts.repeatable {
                alts.push(Expr::Seq(vec![r.clone(), id(s, c2)]));
            }
            for (i, m) in parts.members.iter().enumerate() {
                if parts.states.stays(i) {
                    continue;
                }
                if let Some(t) = parts.states.next(s, i) {
                    alts.push(Expr::Seq(vec![m.clone(), id(t, c2)]));
                }
            }
            alts
        };
        for s in 0..states as u32 {
            for c in 0..width as u32 {
                let mut alts = Vec::new();
                if parts.states.accepting(s) && counter.done(c) {
                    alts.push(Expr::Empty);
                }
                let next = choice(moves(s, c));
                if !is_never(&next) {
                    // One comma for all members: written before each alternative, it was a
                    // copy per member that the automaton builder merged again.
                    alts.push(Expr::Seq(vec![comma.clone(), next]));
                }
                self.define(ids[s as usize * width + c as usize], choice(alts));
            }
        }
        choice(moves(0, 0))
    }
}
