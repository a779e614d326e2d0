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

use serde_json::Value;

use super::any_order::MemberList;
use super::counter::Counter;
use super::lower::{choice, is_never, never, seq, Lowerer};
use super::model::{Field, Keywords, Members, Schema};
use super::string::{content_not_in, literal_string};
use super::validate::{validate, Verdict};
use super::{PropertyOrder, SchemaError};
use crate::frontend::regex::{Anchoring, Regex};
use crate::grammar::Expr;
use crate::util::hash::FastMap;

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

/// The declared members in order (key and member), and the keys that may not appear.
type Declared<'a> = (Vec<(&'a str, Prop)>, Vec<&'a str>);

/// The keywords of an object schema that decide its members, read once.
struct MemberKeywords<'k, 'a> {
    props: &'k Members<'a, Schema<'a>>,
    /// `required`, with the dependencies of required properties.
    required: Vec<&'a str>,
    /// The schema of keys neither declared nor matched by a pattern.
    additional: Schema<'a>,
    /// `patternProperties`, each pattern parsed (`None`: it does not parse).
    patterns: Vec<(&'a str, &'k Schema<'a>, Option<Regex>)>,
    /// `propertyNames`.
    names: Option<&'k Schema<'a>>,
}

impl<'a> Lowerer<'a> {
    /// The body of an `object` schema's rule (`forbidden`: keys that may not appear).
    pub(super) fn object(
        &mut self,
        k: &Keywords<'a>,
        ptr: &str,
        level: u32,
        forbidden: &[&'a str],
    ) -> Result<Expr, SchemaError> {
        if let Some(Field::Ok(deps)) = &k.dependent_schemas {
            if !deps.is_empty() {
                if let Some(e) = self.dependent_schemas(k, deps, ptr, level, forbidden)? {
                    return Ok(e);
                }
                self.relax("dependentSchemas", ptr, "dependent schemas are not enforced")?;
            }
        }
        self.object_with(k, ptr, level, forbidden, &[])
    }

    /// [`Lowerer::object`] with the keys `also_required` required too, and `dependentSchemas`
    /// left to the caller.
    pub(super) fn object_with(
        &mut self,
        k: &Keywords<'a>,
        ptr: &str,
        level: u32,
        forbidden: &[&'a str],
        also_required: &[&'a str],
    ) -> Result<Expr, SchemaError> {
        let empty = Members::default();
        let props = match &k.properties {
            None => &empty,
            Some(Field::Ok(p)) => p,
            Some(Field::Wrong(_)) => return Err(Lowerer::invalid(ptr, "`properties` must be an object")),
        };
        let Some(required) = self.required_names(k, ptr, forbidden, also_required)? else { return Ok(never()) };
        // Sub-schemas are shared, never copied: a copy at every level of a nested schema
        // cost its size times its depth. Strict mode closes only objects that declare their
        // members: a bare `{"type": "object"}` (free-form tool arguments) stays open, as in
        // XGrammar.
        let declares_members = k.properties.is_some() || k.pattern_properties.is_some();
        let additional = k
            .additional_properties
            .as_ref()
            .or(k.unevaluated_properties.as_ref())
            .cloned()
            .unwrap_or(Schema::Bool(!(self.opts.strict_mode && declares_members)));
        let patterns = match &k.pattern_properties {
            Some(Field::Ok(pp)) => pp.iter().map(|(pat, s)| (pat, s, Regex::parse(pat).ok())).collect(),
            Some(Field::Wrong(_)) => return Err(Lowerer::invalid(ptr, "`patternProperties` must be an object")),
            None => Vec::new(),
        };
        let m = MemberKeywords { props, required, additional, patterns, names: k.property_names.as_ref() };
        let Some((list, excluded)) = self.declared_members(&m, ptr, level, forbidden)? else { return Ok(never()) };
        let additional = self.additional_members(&m, &list, &excluded, ptr, level)?;
        let props: Vec<Prop> = list.into_iter().map(|(_, p)| p).collect();
        self.members_counted(k, props, additional, ptr, level)
    }

    /// `required` (and `also_required`) and, transitively, the dependencies
    /// (`dependentRequired`) of required properties; `None` when a required property is
    /// `forbidden`. Other dependencies are reported.
    fn required_names(
        &mut self,
        k: &Keywords<'a>,
        ptr: &str,
        forbidden: &[&'a str],
        also_required: &[&'a str],
    ) -> Result<Option<Vec<&'a str>>, SchemaError> {
        let mut required: Vec<&'a str> = match &k.required {
            None => Vec::new(),
            Some(Field::Ok(r)) => match r.iter().map(|x| x.as_str()).collect::<Option<Vec<_>>>() {
                Some(names) => names,
                None => return Err(Lowerer::invalid(ptr, "`required` must be an array of strings")),
            },
            Some(Field::Wrong(_)) => return Err(Lowerer::invalid(ptr, "`required` must be an array")),
        };
        for name in also_required {
            if !required.contains(name) {
                required.push(name);
            }
        }
        if required.iter().any(|r| forbidden.contains(r)) {
            return Ok(None);
        }
        if matches!(k.dependent_required, Some(Field::Wrong(_))) {
            return Err(Lowerer::invalid(ptr, "`dependentRequired` must be an object"));
        }
        if matches!(k.dependent_schemas, Some(Field::Wrong(_))) {
            return Err(Lowerer::invalid(ptr, "`dependentSchemas` must be an object"));
        }
        if let Some(Field::Ok(deps)) = &k.dependent_required {
            let mut changed = true;
            while changed {
                changed = false;
                for (key, dep) in deps.iter() {
                    if required.contains(&key) {
                        for d in dep.names().into_iter().flatten().filter_map(|d| d.as_str()) {
                            if !required.contains(&d) {
                                required.push(d);
                                changed = true;
                            }
                        }
                    }
                }
            }
            if deps.keys().any(|key| !required.contains(&key)) {
                self.relax("dependentRequired", ptr, "dependencies of optional properties are not enforced")?;
            }
        }
        Ok(Some(required))
    }

    /// The declared properties (and the required ones that are not declared) as members, in
    /// order, with the keys that may not appear (`forbidden` ones, and those whose schema is
    /// unsatisfiable); `None` when a required property cannot appear.
    fn declared_members(
        &mut self,
        m: &MemberKeywords<'_, 'a>,
        ptr: &str,
        level: u32,
        forbidden: &[&'a str],
    ) -> Result<Option<Declared<'a>>, SchemaError> {
        let mut declared: Vec<(&'a str, Schema<'a>, String)> =
            m.props.iter().map(|(key, s)| (key, s.clone(), Lowerer::child(ptr, "properties", key))).collect();
        for &r in &m.required {
            if !m.props.contains_key(r) {
                declared.push((r, Schema::Bool(true), ptr.to_string()));
            }
        }
        let mut list: Vec<(&'a str, Prop)> = Vec::new();
        let mut excluded: Vec<&'a str> = forbidden.to_vec();
        for (key, schema, kptr) in declared {
            let is_required = m.required.contains(&key);
            if forbidden.contains(&key) {
                continue;
            }
            let value = self.declared_value(m, key, schema, &kptr, ptr, level)?;
            if is_never(&value) {
                if is_required {
                    return Ok(None);
                }
                excluded.push(key);
                continue;
            }
            let member = Expr::Seq(vec![literal_string(key), self.layout.colon(), value]);
            list.push((key, Prop { member, required: is_required }));
        }
        Ok(Some((list, excluded)))
    }

    /// The value of the declared property `key` (at `kptr`): its `schema` and what else
    /// applies to the key — matching patterns, else `additionalProperties` (for keys only
    /// `required` names), and `propertyNames`.
    fn declared_value(
        &mut self,
        m: &MemberKeywords<'_, 'a>,
        key: &'a str,
        schema: Schema<'a>,
        kptr: &str,
        ptr: &str,
        level: u32,
    ) -> Result<Expr, SchemaError> {
        let mut parts: Vec<Schema<'a>> = vec![schema];
        let mut matched = false;
        for (pat, ps, re) in &m.patterns {
            match re {
                Some(re) => {
                    if re.is_match(key, Anchoring::Search) {
                        matched = true;
                        parts.push((*ps).clone());
                    }
                }
                None => self.relax("patternProperties", ptr, format!("pattern `{pat}` is not enforced"))?,
            }
        }
        if !m.props.contains_key(key) && !matched {
            parts.push(m.additional.clone());
        }
        if let Some(ns) = m.names {
            match validate(&mut self.doc, ns, &Value::String(key.to_string()), 0) {
                Verdict::Valid => {}
                Verdict::Invalid => parts.push(Schema::Bool(false)),
                Verdict::Unknown(kw) => self.relax(kw, ptr, "propertyNames is not checked on declared properties")?,
            }
        }
        if parts.len() == 1 {
            return self.schema(&parts[0], kptr, level + 1);
        }
        let mut merged = Schema::Bool(true);
        for p in &parts {
            merged = self.merger().merge_pair(&merged, p, kptr)?;
        }
        self.schema(&merged, kptr, level + 1)
    }

    /// The members other than the declared ones (pattern properties, then other keys: none
    /// of `list` and `excluded`), as one expression; `None` when there can be none.
    fn additional_members(
        &mut self,
        m: &MemberKeywords<'_, 'a>,
        list: &[(&'a str, Prop)],
        excluded: &[&'a str],
        ptr: &str,
        level: u32,
    ) -> Result<Option<Expr>, SchemaError> {
        let mut extra = Vec::new();
        for (pat, ps, re) in &m.patterns {
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
            let value = self.schema(ps, &pptr, level + 1)?;
            extra.push(seq(vec![key, self.layout.colon(), value]));
        }
        let other_value = self.schema(&m.additional, &format!("{ptr}/additionalProperties"), level + 1)?;
        if !is_never(&other_value) {
            if m.patterns.iter().any(|(_, ps, _)| !ps.is_true() && !ps.is_empty_object()) {
                self.relax(
                    "patternProperties",
                    ptr,
                    "a key matching a pattern may also take additionalProperties' schema",
                )?;
            }
            let names: Vec<&str> = list.iter().map(|(key, _)| *key).chain(excluded.iter().copied()).collect();
            let key = match m.names {
                Some(ns) => {
                    let nptr = format!("{ptr}/propertyNames");
                    let ns = self.merger().merge_pair(ns, &Schema::object(Keywords::of_type("string")), &nptr)?;
                    self.schema(&ns, &nptr, level + 1)?
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
        Ok(if is_never(&additional) {
            None
        } else if additional.has_more_nodes_than(24) && !list.is_empty() && !any {
            Some(self.rule_for("extra", additional)?)
        } else {
            Some(additional)
        })
    }

    /// The object of the declared members `props` and the `additional` ones, with
    /// `minProperties`/`maxProperties` counted where optional or additional members make them
    /// bind.
    fn members_counted(
        &mut self,
        k: &Keywords<'a>,
        props: Vec<Prop>,
        additional: Option<Expr>,
        ptr: &str,
        level: u32,
    ) -> Result<Expr, SchemaError> {
        let min_p = Lowerer::count(ptr, "minProperties", &k.min_properties, u64::MAX)?.unwrap_or(0);
        let max_p = Lowerer::count(ptr, "maxProperties", &k.max_properties, u64::MAX)?;
        let n_required = props.iter().filter(|p| p.required).count() as u64;
        let most = if additional.is_some() { None } else { Some(props.len() as u64) };
        if max_p.is_some_and(|x| x < n_required) {
            return Ok(never());
        }
        if props.is_empty() {
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
        let (members, counted) = if self.opts.property_order == PropertyOrder::Any {
            self.any_order(props, additional, level, ptr, counter, MemberList::Schema)?
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
