//! Objects: `properties`, `required`, `additionalProperties`, `patternProperties`,
//! `propertyNames`, `minProperties`/`maxProperties`, `dependentRequired`, `dependentSchemas`,
//! `unevaluatedProperties`.
//!
//! Declared properties appear in the order of `properties`; additional properties (keys that
//! are none of the declared names, or that match a `patternProperties` pattern) may appear
//! before, between and after them. The member list is a small automaton over "the next
//! declared property that may still appear" — `first(i)` before any member, `after(i)` once
//! one was written — whose states are inlined when used once and become rules otherwise, so
//! an object of required properties is a single sequence and optional properties cost a rule
//! each at most. With [`PropertyOrder::Any`](super::PropertyOrder::Any), members may come in
//! any order (`any_order.rs`).
//!
//! When optional or additional members let the member count cross `minProperties` or
//! `maxProperties`, the member automaton is multiplied by a counter (`object_count.rs`).

use serde_json::{Map, Value};

use super::counter::Counter;
use super::lower::{choice, is_never, never, seq, Lowerer};
use super::model::{Document, FromJson, Schema};
use super::string::{content_not_in, literal_string};
use super::validate::{validate, Verdict};
use super::{PropertyOrder, SchemaError};
use crate::frontend::regex::{Anchoring, Regex};
use crate::grammar::Expr;
use crate::util::hash::FastMap;

/// The schemas `true` and `false`, to borrow where a property has no schema of its own.
static ANY: Value = Value::Bool(true);
static NOTHING: Value = Value::Bool(false);

/// A declared property as a member (`"key": value`), and whether it is required.
pub(super) struct Prop {
    pub(super) member: Expr,
    pub(super) required: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Node {
    First(usize),
    After(usize),
}

impl Lowerer<'_> {
    /// The body of an `object` schema's rule.
    pub(super) fn object(
        &mut self,
        m: &Map<String, Value>,
        ptr: &str,
        level: u32,
        forbidden: &[String],
    ) -> Result<Expr, SchemaError> {
        let empty = Map::new();
        let props = match m.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err(Lowerer::invalid(ptr, "`properties` must be an object")),
        };
        let mut required: Vec<String> = match m.get("required") {
            None => Vec::new(),
            Some(Value::Array(r)) => r.iter().filter_map(|x| x.as_str().map(String::from)).collect(),
            Some(_) => return Err(Lowerer::invalid(ptr, "`required` must be an array")),
        };
        if required.iter().any(|r| forbidden.contains(r)) {
            return Ok(never());
        }
        // Dependencies of required properties are required too; other dependencies are
        // reported.
        if let Some(Value::Object(deps)) = m.get("dependentRequired") {
            let mut changed = true;
            while changed {
                changed = false;
                for (k, v) in deps {
                    if required.contains(k) {
                        for d in v.as_array().into_iter().flatten().filter_map(Value::as_str) {
                            if !required.iter().any(|r| r == d) {
                                required.push(d.to_string());
                                changed = true;
                            }
                        }
                    }
                }
            }
            if deps.keys().any(|k| !required.contains(k)) {
                self.relax("dependentRequired", ptr, "dependencies of optional properties are not enforced")?;
            }
        }
        if let Some(Value::Object(deps)) = m.get("dependentSchemas") {
            if !deps.is_empty() {
                self.relax("dependentSchemas", ptr, "dependent schemas are not enforced")?;
            }
        }
        let strict_default = if self.opts.strict_mode { Value::Bool(false) } else { Value::Bool(true) };
        // Sub-schemas are borrowed, never copied: a copy at every level of a nested schema
        // cost its size times its depth.
        let additional_schema: &Value =
            m.get("additionalProperties").or_else(|| m.get("unevaluatedProperties")).unwrap_or(&strict_default);
        let patterns: Vec<(&String, &Value, Option<Regex>)> = match m.get("patternProperties") {
            Some(Value::Object(pp)) => pp.iter().map(|(k, v)| (k, v, Regex::parse(k).ok())).collect(),
            _ => Vec::new(),
        };
        let names_schema = m.get("propertyNames");

        // Declared properties (and required ones that are not declared), in order.
        let mut declared: Vec<(String, &Value, String)> =
            props.iter().map(|(k, v)| (k.clone(), v, Lowerer::child(ptr, "properties", k))).collect();
        for r in &required {
            if !props.contains_key(r) {
                declared.push((r.clone(), &ANY, ptr.to_string()));
            }
        }
        let mut list: Vec<(String, Prop)> = Vec::new();
        // Keys that may not appear at all (their schema is unsatisfiable).
        let mut excluded: Vec<String> = forbidden.to_vec();
        for (key, schema, kptr) in declared {
            let is_required = required.contains(&key);
            if forbidden.contains(&key) {
                continue;
            }
            // What else applies to this key: matching patterns, else additionalProperties
            // (for keys only `required` names), and propertyNames.
            let mut parts: Vec<&Value> = vec![schema];
            let mut matched = false;
            for (pat, ps, re) in &patterns {
                match re {
                    Some(re) => {
                        if re.is_match(&key, Anchoring::Search) {
                            matched = true;
                            parts.push(ps);
                        }
                    }
                    None => self.relax("patternProperties", ptr, format!("pattern `{pat}` is not enforced"))?,
                }
            }
            if !props.contains_key(&key) && !matched {
                parts.push(additional_schema);
            }
            if let Some(ns) = names_schema {
                let mut doc = Document::new(self.root);
                match validate(&mut doc, &Schema::from_json(ns), &Value::String(key.clone()), 0) {
                    Verdict::Valid => {}
                    Verdict::Invalid => parts.push(&NOTHING),
                    Verdict::Unknown(kw) => {
                        self.relax(kw, ptr, "propertyNames is not checked on declared properties")?
                    }
                }
            }
            let value = if parts.len() == 1 {
                self.schema_value(schema, &kptr, level + 1)?
            } else {
                let mut merged = Value::Bool(true);
                for p in parts {
                    merged = super::merge::merge_pair(self, &merged, p, &kptr)?;
                }
                self.schema_value(&merged, &kptr, level + 1)?
            };
            if is_never(&value) {
                if is_required {
                    return Ok(never());
                }
                excluded.push(key);
                continue;
            }
            let member = Expr::Seq(vec![literal_string(&key), self.layout.colon(), value]);
            list.push((key, Prop { member, required: is_required }));
        }

        // Additional members: pattern properties, then other keys.
        let mut extra = Vec::new();
        for (pat, ps, re) in &patterns {
            let pptr = Lowerer::child(ptr, "patternProperties", pat);
            let key = match re.as_ref().map(|re| re.to_expr(pat, Anchoring::Search, &mut super::string::json_char)) {
                Some(Ok(k)) => Expr::Seq(vec![Expr::literal("\""), k, Expr::literal("\"")]),
                Some(Err(e)) => {
                    self.relax(
                        "patternProperties",
                        &pptr,
                        format!("pattern not enforced on keys: {}", e.syntax().message()),
                    )?;
                    super::string::any_string()
                }
                None => {
                    let why = Regex::parse(pat).err().map(|e| e.syntax().message().to_string()).unwrap_or_default();
                    self.relax("patternProperties", &pptr, format!("pattern not enforced on keys: {why}"))?;
                    super::string::any_string()
                }
            };
            let value = self.schema_value(ps, &pptr, level + 1)?;
            extra.push(seq(vec![key, self.layout.colon(), value]));
        }
        let other_value = self.schema_value(additional_schema, &format!("{ptr}/additionalProperties"), level + 1)?;
        if !is_never(&other_value) {
            if !patterns.is_empty()
                && patterns.iter().any(|(_, ps, _)| **ps != Value::Bool(true) && **ps != Value::Object(Map::new()))
            {
                self.relax(
                    "patternProperties",
                    ptr,
                    "a key matching a pattern may also take additionalProperties' schema",
                )?;
            }
            let names: Vec<&str> =
                list.iter().map(|(k, _)| k.as_str()).chain(excluded.iter().map(String::as_str)).collect();
            let key = match names_schema {
                Some(ns) => {
                    let ns = super::merge::merge_pair(
                        self,
                        ns,
                        &serde_json::json!({"type": "string"}),
                        &format!("{ptr}/propertyNames"),
                    )?;
                    self.schema_value(&ns, &format!("{ptr}/propertyNames"), level + 1)?
                }
                None => match content_not_in(&names, &self.content_tail(), &self.escape_tail()) {
                    Some(c) => Expr::Seq(vec![Expr::literal("\""), c, Expr::literal("\"")]),
                    None => super::string::any_string(),
                },
            };
            extra.push(seq(vec![key, self.layout.colon(), other_value]));
        }
        let additional = choice(extra);
        // Additional members are repeated between declared ones: share them through a rule
        // unless they are tiny. In any order, they go into the rule of all members that may
        // repeat (`any_order.rs`), where their key (often the complement of a trie of the
        // declared keys) and the declared keys become one trie in one automaton.
        let any = self.opts.property_order == PropertyOrder::Any;
        let additional = if is_never(&additional) {
            None
        } else if additional.has_more_nodes_than(24) && !list.is_empty() && !any {
            Some(self.rule_for("extra", additional)?)
        } else {
            Some(additional)
        };

        // minProperties / maxProperties.
        let count = |k: &str| m.get(k).and_then(Value::as_u64);
        let (min_p, max_p) = (count("minProperties").unwrap_or(0), count("maxProperties"));
        let n_required = list.iter().filter(|(_, p)| p.required).count() as u64;
        let most = if additional.is_some() { None } else { Some(list.len() as u64) };
        if max_p.is_some_and(|x| x < n_required) {
            return Ok(never());
        }
        if list.is_empty() {
            let Some(a) = additional else {
                return Ok(if min_p == 0 { self.layout.empty("{", "}") } else { never() });
            };
            let lo = min_p.max(1).min(u64::from(u32::MAX)) as u32;
            let hi = max_p.map(|x| x.min(u64::from(u32::MAX)) as u32);
            if hi == Some(0) {
                return Ok(self.layout.empty("{", "}"));
            }
            let members = Expr::Seq(vec![
                a.clone(),
                Expr::repeat(Expr::Seq(vec![self.layout.comma(level), a]), lo - 1, hi.map(|h| h - 1)),
            ]);
            let full = Expr::Seq(vec![self.layout.open("{", level), members, self.layout.close("}", level)]);
            return Ok(if min_p == 0 { Expr::Choice(vec![self.layout.empty("{", "}"), full]) } else { full });
        }
        // A count bound that optional or additional members make necessary.
        let min_binds = min_p > n_required;
        let max_binds = max_p.is_some_and(|mx| most.is_none_or(|most| most > mx));
        let clamp = |x: u64| x.min(u64::from(u32::MAX)) as u32;
        let counter = (min_binds || max_binds).then(|| Counter { min: clamp(min_p), max: max_p.map(clamp) });
        let props: Vec<Prop> = list.into_iter().map(|(_, p)| p).collect();
        let (members, counted) = if any {
            self.any_order(props, additional, level, ptr, counter)?
        } else {
            match counter {
                Some(counter) => match self.declared_order_counted(&props, additional.as_ref(), level, counter)? {
                    Some(members) => (members, true),
                    None => (self.declared_order(&props, additional.as_ref(), level)?, false),
                },
                None => (self.declared_order(&props, additional.as_ref(), level)?, true),
            }
        };
        if !counted {
            let why = "too many properties to count them";
            if min_binds {
                self.relax("minProperties", ptr, format!("minProperties is not enforced: {why}"))?;
            }
            if max_binds {
                self.relax("maxProperties", ptr, format!("maxProperties is not enforced: {why}"))?;
            }
        }
        let full = seq(vec![self.layout.open("{", level), members, self.layout.close("}", level)]);
        let empty_ok = n_required == 0 && min_p == 0;
        Ok(if empty_ok { choice(vec![self.layout.empty("{", "}"), full]) } else { full })
    }

    /// Members in declared order with additional members anywhere (see the module docs).
    fn declared_order(&mut self, props: &[Prop], additional: Option<&Expr>, level: u32) -> Result<Expr, SchemaError> {
        let n = props.len();
        let comma = self.layout.comma(level);
        // Alternatives of each node: sequences of expressions and node references.
        enum Part {
            E(Expr),
            N(Node),
        }
        let def = |node: Node| -> Vec<Vec<Part>> {
            let extra_star = |before: bool| -> Option<Part> {
                additional.map(|a| {
                    let pair = if before {
                        Expr::Seq(vec![a.clone(), comma.clone()])
                    } else {
                        Expr::Seq(vec![comma.clone(), a.clone()])
                    };
                    Part::E(Expr::star(pair))
                })
            };
            match node {
                Node::After(i) if i == n => vec![extra_star(false).into_iter().collect()],
                Node::After(i) => {
                    let mut alts = Vec::new();
                    let mut a: Vec<Part> = extra_star(false).into_iter().collect();
                    a.push(Part::E(comma.clone()));
                    a.push(Part::E(props[i].member.clone()));
                    a.push(Part::N(Node::After(i + 1)));
                    alts.push(a);
                    if !props[i].required {
                        alts.push(vec![Part::N(Node::After(i + 1))]);
                    }
                    alts
                }
                Node::First(i) if i == n => match additional {
                    Some(a) => vec![vec![Part::E(a.clone()), Part::N(Node::After(n))]],
                    None => vec![vec![Part::E(never())]],
                },
                Node::First(i) => {
                    let mut alts = Vec::new();
                    let mut a: Vec<Part> = extra_star(true).into_iter().collect();
                    a.push(Part::E(props[i].member.clone()));
                    a.push(Part::N(Node::After(i + 1)));
                    alts.push(a);
                    if !props[i].required {
                        alts.push(vec![Part::N(Node::First(i + 1))]);
                    }
                    alts
                }
            }
        };
        // The nodes `def(node)` references, with multiplicity (without building its parts).
        let successors = |node: Node| -> [Option<Node>; 2] {
            match node {
                Node::After(i) if i == n => [None, None],
                Node::After(i) => [Some(Node::After(i + 1)), (!props[i].required).then_some(Node::After(i + 1))],
                Node::First(i) if i == n => [additional.map(|_| Node::After(n)), None],
                Node::First(i) => [Some(Node::After(i + 1)), (!props[i].required).then_some(Node::First(i + 1))],
            }
        };
        // Reference counts from First(0).
        let mut refs: FastMap<Node, usize> = FastMap::default();
        let mut stack = vec![Node::First(0)];
        refs.insert(Node::First(0), 1);
        while let Some(node) = stack.pop() {
            for x in successors(node).into_iter().flatten() {
                let c = refs.entry(x).or_insert(0);
                *c += 1;
                if *c == 1 {
                    stack.push(x);
                }
            }
        }
        // Materialize from the end: After(n..0), then First(n..0).
        let mut done: FastMap<Node, Expr> = FastMap::default();
        let order: Vec<Node> = (0..=n).rev().map(Node::After).chain((0..=n).rev().map(Node::First)).collect();
        for node in order {
            let Some(&count) = refs.get(&node) else { continue };
            let alts: Vec<Expr> = def(node)
                .into_iter()
                .map(|alt| {
                    seq(alt
                        .into_iter()
                        .map(|p| match p {
                            Part::E(e) => e,
                            // A node used once is moved into its only user.
                            Part::N(x) if refs[&x] == 1 => done.remove(&x).expect("built before its users"),
                            Part::N(x) => done[&x].clone(),
                        })
                        .collect())
                })
                .collect();
            let body = choice(alts);
            let e = if count > 1 { self.rule_for("props", body)? } else { body };
            done.insert(node, e);
        }
        Ok(done.remove(&Node::First(0)).expect("the start is reachable"))
    }
}
