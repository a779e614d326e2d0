//! `minProperties`/`maxProperties` when optional or additional properties make the member
//! count vary: the member automaton of `object.rs` times a [`Counter`] of members written.
//!
//! Declared order (here): states (`first(i)` / `after(i)`, count) — `first(i)` is "no comma
//! before the next member", `after(i)` is "declared property `i` may come next"; any order
//! (`any_order.rs`): states (state of the member automaton, count). Each state is one rule, so
//! the size is polynomial: 2·(n+1)·(cap+1) rules in declared order, states·(cap+1) in any
//! order, and the caller reports a relaxation beyond [`MAX_COUNTED_STATES`]. Every member
//! counts, additional ones included; in any order, where a key may repeat, each occurrence
//! counts (a duplicate key is already outside the exact language there).

use super::counter::Counter;
use super::lower::{choice, Lowerer};
use super::object::Prop;
use super::SchemaError;
use crate::grammar::{Expr, RuleId};

/// The most (automaton state, count) pairs turned into rules for one object schema.
pub(super) const MAX_COUNTED_STATES: usize = 8192;

impl Lowerer<'_> {
    /// Members in declared order with their count in `counter` (`None`: too many states).
    pub(super) fn declared_order_counted(
        &mut self,
        props: &[Prop],
        additional: Option<&Expr>,
        level: u32,
        counter: Counter,
    ) -> Result<Option<Expr>, SchemaError> {
        let n = props.len();
        let width = counter.cap() as usize + 1;
        let total = 2 * (n + 1) * width;
        if total > MAX_COUNTED_STATES || total > self.rules_left() {
            return Ok(None);
        }
        let comma = self.layout.comma(level);
        // ids[(after, i, c)]; after = 0 for first(i), 1 for after(i).
        let ids: Vec<RuleId> = (0..total).map(|_| self.new_rule("counted")).collect();
        let id = |after: usize, i: usize, c: u32| Expr::Rule(ids[(after * (n + 1) + i) * width + c as usize]);
        for c in 0..width as u32 {
            let next = counter.step(c);
            for i in 0..=n {
                // first(i): extras then a comma stay in first(i); member i leads to after(i+1).
                let mut alts = Vec::new();
                if let Some(c2) = next {
                    if let Some(a) = additional {
                        if i < n {
                            alts.push(Expr::Seq(vec![a.clone(), comma.clone(), id(0, i, c2)]));
                        } else {
                            alts.push(Expr::Seq(vec![a.clone(), id(1, n, c2)]));
                        }
                    }
                    if i < n {
                        alts.push(Expr::Seq(vec![props[i].member.clone(), id(1, i + 1, c2)]));
                    }
                }
                if i < n && !props[i].required {
                    alts.push(id(0, i + 1, c));
                }
                self.define(ids[i * width + c as usize], choice(alts));
                // after(i): a comma then an extra, or member i; or skip an optional member.
                let mut alts = Vec::new();
                if i == n && counter.done(c) {
                    alts.push(Expr::Empty);
                }
                if let Some(c2) = next {
                    if let Some(a) = additional {
                        alts.push(Expr::Seq(vec![comma.clone(), a.clone(), id(1, i, c2)]));
                    }
                    if i < n {
                        alts.push(Expr::Seq(vec![comma.clone(), props[i].member.clone(), id(1, i + 1, c2)]));
                    }
                }
                if i < n && !props[i].required {
                    alts.push(id(1, i + 1, c));
                }
                self.define(ids[((n + 1) + i) * width + c as usize], choice(alts));
            }
        }
        Ok(Some(id(0, 0, 0)))
    }
}
