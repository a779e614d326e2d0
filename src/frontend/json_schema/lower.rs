//! The driver of the JSON Schema front-end: schema kinds, references, combinators, `enum`,
//! `const`, `type`, and the layout (whitespace) of the generated grammar.
//!
//! Every sub-schema lowers to an [`Expr`]; objects and arrays get a rule of their own (so
//! expression depth stays bounded whatever the schema's nesting), scalars stay inline (one
//! automaton per rule means fewer rule boundaries and faster masks). An unsatisfiable
//! sub-schema lowers to the empty choice ("never"); a final pass drops references to rules
//! whose language turned out empty, so `{"properties": {"x": false}}` simply forbids `x`.
//! References (`$ref`) become rule references created on first use and defined from a
//! worklist, which handles recursion and keeps the walk's stack depth equal to the schema's
//! literal nesting.

use std::rc::Rc;

use serde_json::Value;

use super::fragment::{self, Fragment, SchemaFragmentCache};
use super::merge::Merger;
use super::model::{is_annotation, Document, Field, FromJson, Keywords, Kw, Num, Schema, TypeNames, View};
use super::negation::Excluded;
use super::relax::Relaxations;
use super::string::content_not_in;
use super::validate::{self, Verdict};
use super::{pointer_segment, value, JsonSchemaOptions, JsonSchemaReport, SchemaError, SchemaErrorKind};
use crate::grammar::passes::productive_bodies;
use crate::grammar::{rename_rules, Expr, Grammar, GrammarBuilder, GrammarLimits, RuleId};
use crate::util::hash::FastMap;

/// The empty language.
pub(super) fn never() -> Expr {
    Expr::Choice(Vec::new())
}

/// The widest `indent` accepted.
const MAX_INDENT_WIDTH: u32 = 1024;

/// The bytes of literal text in `e` (what grows with a schema's layout: indentation).
fn literal_bytes(e: &Expr) -> usize {
    match e {
        Expr::Bytes(b) => b.len(),
        _ => e.children().iter().map(literal_bytes).sum(),
    }
}

pub(super) fn is_never(e: &Expr) -> bool {
    matches!(e, Expr::Choice(v) if v.is_empty())
}

/// A sequence that is "never" as soon as one item is.
pub(super) fn seq(items: Vec<Expr>) -> Expr {
    if items.iter().any(is_never) {
        return never();
    }
    Expr::Seq(items)
}

/// A choice without its "never" alternatives.
pub(super) fn choice(alts: Vec<Expr>) -> Expr {
    let mut alts: Vec<Expr> = alts.into_iter().filter(|a| !is_never(a)).collect();
    if alts.len() == 1 {
        return alts.pop().unwrap();
    }
    Expr::Choice(alts)
}

/// The JSON types, in a fixed order.
pub(super) const TYPES: [&str; 7] = ["null", "boolean", "object", "array", "string", "number", "integer"];

/// Whitespace and separators of the output.
#[derive(Clone, Debug)]
pub(super) struct Layout {
    ws: Option<Expr>,
    item_sep: String,
    key_sep: String,
    indent: Option<u32>,
}

impl Layout {
    fn new(o: &JsonSchemaOptions) -> Layout {
        if o.any_whitespace {
            let ws = Expr::repeat(Expr::class([(9, 10), (13, 13), (32, 32)], false), 0, o.max_whitespace_cnt);
            return Layout { ws: Some(ws), item_sep: ",".into(), key_sep: ":".into(), indent: None };
        }
        let (item_sep, key_sep) = match &o.separators {
            Some((a, b)) => (a.clone(), b.clone()),
            None if o.indent.is_some() => (",".into(), ": ".into()),
            None => (", ".into(), ": ".into()),
        };
        Layout { ws: None, item_sep, key_sep, indent: o.indent }
    }
    /// Whitespace allowed between tokens (empty for exact layouts).
    pub(super) fn ws(&self) -> Expr {
        self.ws.clone().unwrap_or(Expr::Empty)
    }
    fn newline(&self, level: u32) -> Expr {
        match self.indent {
            Some(n) => Expr::literal(format!("\n{}", " ".repeat(n as usize * level as usize))),
            None => Expr::Empty,
        }
    }
    /// Between two members or items of a container at `level`.
    pub(super) fn comma(&self, level: u32) -> Expr {
        Expr::Seq(vec![self.ws(), Expr::literal(&self.item_sep), self.ws(), self.newline(level + 1)])
    }
    /// Between a key and its value.
    pub(super) fn colon(&self) -> Expr {
        Expr::Seq(vec![self.ws(), Expr::literal(&self.key_sep), self.ws()])
    }
    /// An opening bracket and what may follow it in a non-empty container at `level`.
    pub(super) fn open(&self, bracket: &str, level: u32) -> Expr {
        Expr::Seq(vec![Expr::literal(bracket), self.ws(), self.newline(level + 1)])
    }
    /// What precedes the closing bracket of a non-empty container at `level`.
    pub(super) fn close(&self, bracket: &str, level: u32) -> Expr {
        Expr::Seq(vec![self.ws(), self.newline(level), Expr::literal(bracket)])
    }
    /// An empty container.
    pub(super) fn empty(&self, open: &str, close: &str) -> Expr {
        Expr::Seq(vec![Expr::literal(open), self.ws(), Expr::literal(close)])
    }
    /// The level a shared rule (a `$ref` target, a memoized intersection) is lowered at. With
    /// `indent`, every level has its own layout, so a recursive schema would need a rule per
    /// level without end (the language of unboundedly growing indentation is not context-free):
    /// capped at `MAX_INDENT_LEVEL`, deeper values keep that level's indentation, as in
    /// [`Lowerer::any`]. Without `indent`, the level does not change the layout.
    fn shared_level(&self, level: u32) -> u32 {
        if self.indent.is_some() {
            level.min(MAX_INDENT_LEVEL)
        } else {
            level
        }
    }
    /// The level used to key shared rules: layouts without indentation do not depend on it.
    fn key_level(&self, level: u32) -> u32 {
        if self.indent.is_some() {
            level
        } else {
            0
        }
    }
}

/// The most names in `not: {required: [...]}` enforced (one object variant per name).
const MAX_NOT_REQUIRED: usize = 4;

/// Keeps memoized merge rules apart from `$ref` rules in the shared map.
const MEMO_LEVEL_TAG: u32 = 1 << 30;

/// The deepest sub-schema nesting at which `anyOf`/`oneOf` branches go through the fragment
/// cache (a request's tools sit at depth 1 or 2).
const MAX_FRAGMENT_DEPTH: usize = 4;

/// The deepest indentation level rules are generated for with `indent`; deeper generic values
/// are written on one line.
const MAX_INDENT_LEVEL: u32 = 64;

pub(super) struct Lowerer<'a> {
    pub(super) opts: &'a JsonSchemaOptions,
    pub(super) layout: Layout,
    names: Vec<String>,
    bodies: Vec<Option<Expr>>,
    refs: FastMap<(String, u32), RuleId>,
    pending: Vec<(RuleId, String, u32)>,
    any_rules: FastMap<u32, RuleId>,
    shared: FastMap<&'static str, RuleId>,
    /// The document: parsed schemas, `$ref` targets.
    pub(super) doc: Document<'a>,
    pub(super) report: Relaxations,
    depth: usize,
    schemas: usize,
    /// The document declares a draft up to 7, where `$ref` overrides its siblings.
    legacy_ref: bool,
    /// Lowered sub-schemas shared with other documents, if any (see [`super::fragment`]).
    fragments: Option<&'a SchemaFragmentCache>,
    /// The deepest `depth` reached (a fragment records what it needs).
    deepest: usize,
    /// Bytes of literal text in the rule bodies defined so far (bounded by
    /// [`super::JsonSchemaLimits::max_text_bytes`]).
    text_bytes: usize,
    /// The part of `text_bytes` already charged to the compile's byte budget (`util::cancel`).
    charged_text: usize,
}

impl<'a> Lowerer<'a> {
    pub(super) fn run(
        root: &'a Value,
        opts: &'a JsonSchemaOptions,
        fragments: Option<&'a SchemaFragmentCache>,
    ) -> Result<(Grammar, JsonSchemaReport), SchemaError> {
        // Each line of an indented layout is a literal: an absurd width is memory, not layout.
        if let Some(n) = opts.indent.filter(|&n| n > MAX_INDENT_WIDTH) {
            return Err(Self::invalid("#", format!("`indent` is {n} spaces, the most is {MAX_INDENT_WIDTH}")));
        }
        let mut l = Lowerer::new(root, opts, fragments);
        let root_rule = l.new_rule("root");
        let body = l.schema(&Schema::from_json(root), "#", 0)?;
        let ws = l.layout.ws();
        l.bodies[root_rule.index()] = Some(seq(vec![ws.clone(), body, ws]));
        l.lower_pending()?;
        let grammar = l.finish()?;
        Ok((grammar, JsonSchemaReport { relaxations: l.report.into_list() }))
    }

    /// Lowers `schema` on its own as a [`Fragment`] whose root rule matches its values at
    /// nesting `level` (no surrounding whitespace); see [`super::fragment`].
    fn run_fragment(schema: &'a Value, opts: &'a JsonSchemaOptions, level: u32) -> Result<Fragment, SchemaError> {
        // Branches inside a fragment are lowered inline (see `branch`).
        let mut l = Lowerer::new(schema, opts, None);
        let root_rule = l.new_rule("frag");
        let body = l.schema(&Schema::from_json(schema), "#", level)?;
        l.bodies[root_rule.index()] = Some(body);
        l.lower_pending()?;
        let grammar = l.finish()?;
        Ok(Fragment { grammar, relaxations: l.report.into_list(), depth: l.deepest, schemas: l.schemas })
    }

    fn new(root: &'a Value, opts: &'a JsonSchemaOptions, fragments: Option<&'a SchemaFragmentCache>) -> Self {
        Lowerer {
            opts,
            layout: Layout::new(opts),
            names: Vec::new(),
            bodies: Vec::new(),
            refs: FastMap::default(),
            pending: Vec::new(),
            any_rules: FastMap::default(),
            shared: FastMap::default(),
            doc: Document::new(root),
            report: Relaxations::new(opts.strict_keywords),
            depth: 0,
            schemas: 0,
            legacy_ref: root.get("$schema").and_then(Value::as_str).is_some_and(|d| {
                ["draft-03", "draft-04", "draft-05", "draft-06", "draft-07"].iter().any(|v| d.contains(v))
            }),
            fragments,
            deepest: 0,
            text_bytes: 0,
            charged_text: 0,
        }
    }

    /// Lowers the targets of the references met so far (and of those they meet).
    fn lower_pending(&mut self) -> Result<(), SchemaError> {
        while let Some((rule, ptr, level)) = self.pending.pop() {
            crate::util::cancel::check("JSON Schema lowering")?;
            let target = self.doc.resolve(&ptr, &ptr)?;
            let body = self.schema(&Schema::from_json(target), &ptr, level)?;
            self.define(rule, body);
        }
        Ok(())
    }

    /// The branch `b` of an `anyOf`/`oneOf` at `ptr`: through the fragment cache when there is
    /// one and the branch is self-contained, else lowered inline.
    fn branch(&mut self, b: &Schema<'a>, ptr: &str, level: u32) -> Result<Expr, SchemaError> {
        // Only near the top of the document (where a request's tools are), and not inside a
        // fragment: checking and hashing a branch costs its size, so doing it at every level of
        // a deeply nested schema would cost its size times its depth. A branch that is not a
        // value of the document (a merge result) is lowered inline: it is an `allOf` of two
        // schemas, with no properties of its own to be worth a fragment.
        let cache = self.fragments.filter(|_| self.depth <= MAX_FRAGMENT_DEPTH);
        if let (Some(cache), Some(b)) = (cache, b.source()) {
            if fragment::is_worth_caching(b) && fragment::is_self_contained(b) {
                let opts = self.opts;
                let fragment = cache.get_or_lower(b, opts, level, || Lowerer::run_fragment(b, opts, level).ok());
                if let Some(e) = fragment.map(|f| self.import_fragment(&f, ptr)).transpose()?.flatten() {
                    return Ok(e);
                }
            }
        }
        self.schema(b, ptr, level)
    }

    /// Adds the rules of `f` under fresh ids and its relaxations under `ptr`; `None` when that
    /// would cross a limit (the caller lowers inline, which reports the limit precisely).
    fn import_fragment(&mut self, f: &Fragment, ptr: &str) -> Result<Option<Expr>, SchemaError> {
        let limits = &self.opts.limits;
        let rules = f.grammar.rules();
        if self.depth + f.depth > limits.max_depth
            || self.schemas + f.schemas > limits.max_schemas
            || rules.len() > self.rules_left()
        {
            return Ok(None);
        }
        let ids: Vec<RuleId> = rules.iter().map(|_| self.new_rule("frag")).collect();
        for (rule, &id) in rules.iter().zip(&ids) {
            self.define(id, rename_rules(&rule.body, &ids));
        }
        self.schemas += f.schemas;
        for r in &f.relaxations {
            self.relax(&r.keyword, &fragment::reroot(&r.pointer, ptr), r.detail.clone())?;
        }
        Ok(Some(Expr::Rule(ids[f.grammar.root().index()])))
    }

    pub(super) fn new_rule(&mut self, prefix: &str) -> RuleId {
        let id = RuleId::new(self.names.len());
        self.names.push(numbered_name(prefix, self.names.len()));
        self.bodies.push(None);
        id
    }

    /// How many more rules the limits allow.
    pub(super) fn rules_left(&self) -> usize {
        self.opts.limits.max_rules.saturating_sub(self.names.len())
    }

    /// Defines a rule created with [`Lowerer::new_rule`].
    pub(super) fn define(&mut self, id: RuleId, body: Expr) {
        self.text_bytes += literal_bytes(&body);
        self.bodies[id.index()] = Some(body);
    }

    /// A fresh rule with `body`, or `body` itself when it is "never".
    pub(super) fn rule_for(&mut self, prefix: &str, body: Expr) -> Result<Expr, SchemaError> {
        if is_never(&body) {
            return Ok(body);
        }
        if self.names.len() >= self.opts.limits.max_rules {
            return Err(SchemaError::new(
                "#",
                SchemaErrorKind::TooLarge(format!("more than {} rules", self.opts.limits.max_rules)),
            ));
        }
        let id = self.new_rule(prefix);
        self.define(id, body);
        Ok(Expr::Rule(id))
    }

    /// Drops rules whose language is empty (and the parts that need them), then builds the
    /// grammar.
    fn finish(&mut self) -> Result<Grammar, SchemaError> {
        let n = self.bodies.len();
        let bodies: Vec<Expr> =
            std::mem::take(&mut self.bodies).into_iter().map(|b| b.expect("every rule is defined")).collect();
        let productive = productive_bodies(n, |r| &bodies[r]);
        if !productive[0] {
            return Err(SchemaError::new(
                "#",
                SchemaErrorKind::Unsatisfiable("no JSON value satisfies the schema".into()),
            ));
        }
        let limits = GrammarLimits { max_rules: self.opts.limits.max_rules.max(16), ..GrammarLimits::default() };
        let names = std::mem::take(&mut self.names);
        // Rule names are distinct by construction; the builder prunes the unproductive parts
        // with the analysis above, in the walk that normalizes.
        let rules: Vec<(String, Expr)> = names.into_iter().zip(bodies).collect();
        GrammarBuilder::build_pruning(rules, &productive, RuleId::new(0), &limits)
            .map_err(|e| SchemaError::new("#", SchemaErrorKind::Grammar(e)))
    }

    /// Records a relaxation, or fails with `strict_keywords`.
    pub(super) fn relax(&mut self, keyword: &str, ptr: &str, detail: impl Into<String>) -> Result<(), SchemaError> {
        self.report.relax(keyword, ptr, detail)
    }

    pub(super) fn invalid(ptr: &str, msg: impl Into<String>) -> SchemaError {
        SchemaError::new(ptr, SchemaErrorKind::Invalid(msg.into()))
    }

    /// A count keyword (`minItems`, `maxLength`, `minProperties`, ...): a non-negative integer
    /// (`2.0` included), saturated at `cap`; anything else is an error naming the keyword.
    pub(super) fn count(ptr: &str, name: &str, v: &Option<Num<'_>>, cap: u64) -> Result<Option<u64>, SchemaError> {
        match v {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                // Exact for integers written as such; `2.0` and huge values through the float.
                Some(f) if f >= 0.0 && f.fract() == 0.0 => Ok(Some(v.as_u64().unwrap_or(f as u64).min(cap))),
                _ => Err(Lowerer::invalid(ptr, format!("`{name}` must be a non-negative integer"))),
            },
        }
    }

    /// The rule for the schema a `$ref` names, created on first use.
    fn ref_rule(&mut self, reference: &str, ptr: &str, level: u32) -> Result<Expr, SchemaError> {
        if let Err(e) = self.doc.resolve(reference, ptr) {
            if self.doc.is_external(reference) {
                self.relax("$ref", ptr, format!("external reference `{reference}` is not resolved: any value"))?;
                return Ok(self.any(level));
            }
            return Err(e);
        }
        let level = self.layout.shared_level(level);
        let key = (Document::ref_key(reference), self.layout.key_level(level));
        if let Some(&id) = self.refs.get(&key) {
            return Ok(Expr::Rule(id));
        }
        if self.names.len() >= self.opts.limits.max_rules {
            return Err(SchemaError::new(
                ptr,
                SchemaErrorKind::TooLarge(format!("more than {} rules", self.opts.limits.max_rules)),
            ));
        }
        let id = self.new_rule("ref");
        self.refs.insert(key.clone(), id);
        self.pending.push((id, reference.to_string(), level));
        Ok(Expr::Rule(id))
    }

    /// A rule shared by the whole grammar, created on first use.
    fn shared_rule(&mut self, name: &'static str, body: impl FnOnce(&mut Self) -> Expr) -> Expr {
        if let Some(&id) = self.shared.get(name) {
            return Expr::Rule(id);
        }
        let id = self.new_rule(name);
        self.shared.insert(name, id);
        let b = body(self);
        self.define(id, b);
        Expr::Rule(id)
    }

    /// Any string content (a shared rule).
    pub(super) fn content_tail(&mut self) -> Expr {
        self.shared_rule("strtail", |_| Expr::star(super::string::any_json_char()))
    }

    /// A backslash escape, then any string content (a shared rule).
    pub(super) fn escape_tail(&mut self) -> Expr {
        self.shared_rule("esctail", |l| {
            let tail = l.content_tail();
            Expr::Seq(vec![super::string::any_escape(), tail])
        })
    }

    /// The rule for a synthesized schema identified by `key`, created (and its body lowered by
    /// `body`, at the level it is given: see [`Layout::shared_level`]) on first use; a
    /// recursive use while lowering refers to the rule itself.
    fn memo_rule(
        &mut self,
        key: String,
        level: u32,
        body: impl FnOnce(&mut Self, u32) -> Result<Expr, SchemaError>,
    ) -> Result<Expr, SchemaError> {
        let level = self.layout.shared_level(level);
        let k = (key, self.layout.key_level(level) + MEMO_LEVEL_TAG);
        if let Some(&id) = self.refs.get(&k) {
            return Ok(Expr::Rule(id));
        }
        if self.names.len() >= self.opts.limits.max_rules {
            return Err(SchemaError::new(
                "#",
                SchemaErrorKind::TooLarge(format!("more than {} rules", self.opts.limits.max_rules)),
            ));
        }
        let id = self.new_rule("merged");
        self.refs.insert(k, id);
        let e = body(self, level)?;
        self.define(id, e);
        Ok(Expr::Rule(id))
    }

    /// The rule matching any JSON value at `level`.
    pub(super) fn any(&mut self, level: u32) -> Expr {
        let level = if self.layout.indent.is_some() { level.min(MAX_INDENT_LEVEL) } else { 0 };
        if let Some(&id) = self.any_rules.get(&level) {
            return Expr::Rule(id);
        }
        let id = self.new_rule("any");
        self.any_rules.insert(level, id);
        let next =
            if level < MAX_INDENT_LEVEL && self.layout.indent.is_some() { self.any(level + 1) } else { Expr::Rule(id) };
        let body = value::any_value(&self.layout, level, next);
        self.define(id, body);
        Expr::Rule(id)
    }

    /// Lowers the sub-schema `s` found at `ptr`, for a value at nesting `level`.
    pub(super) fn schema(&mut self, s: &Schema<'a>, ptr: &str, level: u32) -> Result<Expr, SchemaError> {
        crate::util::cancel::check("JSON Schema lowering")?;
        if self.text_bytes > self.charged_text {
            crate::util::cancel::charge_bytes(self.text_bytes - self.charged_text, "JSON Schema lowering")?;
            self.charged_text = self.text_bytes;
        }
        self.depth += 1;
        self.deepest = self.deepest.max(self.depth);
        self.schemas += 1;
        if self.depth > self.opts.limits.max_depth {
            self.depth -= 1;
            return Err(SchemaError::new(
                ptr,
                SchemaErrorKind::TooLarge(format!("nesting deeper than {}", self.opts.limits.max_depth)),
            ));
        }
        if self.text_bytes > self.opts.limits.max_text_bytes {
            self.depth -= 1;
            return Err(SchemaError::new(
                ptr,
                SchemaErrorKind::TooLarge(format!(
                    "more than {} bytes of grammar text",
                    self.opts.limits.max_text_bytes
                )),
            ));
        }
        if self.schemas > self.opts.limits.max_schemas {
            self.depth -= 1;
            return Err(SchemaError::new(
                ptr,
                SchemaErrorKind::TooLarge(format!("more than {} sub-schemas", self.opts.limits.max_schemas)),
            ));
        }
        let r = match self.doc.view(s) {
            View::Bool(true) => Ok(self.any(level)),
            View::Bool(false) => Ok(never()),
            View::Object(k) => self.object_schema(&k, ptr, level),
            View::NotASchema => Err(Self::invalid(ptr, "a schema must be an object or a boolean")),
        };
        self.depth -= 1;
        r
    }

    /// The merge of schemas, reading this document and reporting here.
    pub(super) fn merger(&mut self) -> Merger<'_, 'a> {
        Merger { doc: &mut self.doc, report: &mut self.report }
    }

    fn object_schema(&mut self, k: &Rc<Keywords<'a>>, ptr: &str, level: u32) -> Result<Expr, SchemaError> {
        let normalized;
        let k = if k.needs_normalize() {
            let mut n = (**k).clone();
            n.normalize();
            normalized = Rc::new(n);
            &normalized
        } else {
            k
        };
        if let Some(r) = &k.reference {
            let Field::Ok(reference) = *r else { return Err(Self::invalid(ptr, "`$ref` must be a string")) };
            // Up to draft 7, keywords next to `$ref` are ignored; from 2019-09 on they apply.
            if !k.has_constraints() || self.legacy_ref {
                return self.ref_rule(reference, ptr, level);
            }
        }
        if k.has(Kw::Ref) || k.has(Kw::AllOf) {
            // Memoized by content: intersections of recursive schemas then close into rules
            // (a product construction) instead of unfolding forever.
            let key = serde_json::to_string(&**k).expect("a schema serializes");
            return self.memo_rule(key, level, |l, level| {
                let merged = l.merger().flatten(k, ptr)?;
                l.schema(&merged, ptr, level)
            });
        }
        for kw in [Kw::AnyOf, Kw::OneOf] {
            if k.has(kw) {
                return self.any_of(k, kw, ptr, level);
            }
        }
        self.simple(k, ptr, level)
    }

    /// `anyOf` / `oneOf` (`kw`): one alternative per branch, each intersected with the sibling
    /// keywords (so `{"required": ["a"], "anyOf": [...]}` keeps `required` in every branch).
    fn any_of(&mut self, k: &Keywords<'a>, kw: Kw, ptr: &str, level: u32) -> Result<Expr, SchemaError> {
        let key = kw.name();
        let branches = if kw == Kw::AnyOf { &k.any_of } else { &k.one_of };
        let Some(Field::Ok(branches)) = branches else {
            return Err(Self::invalid(ptr, format!("`{key}` must be an array")));
        };
        // The siblings of `key`.
        let mut base = k.clone();
        base.remove_keeping_order(kw);
        let has_siblings = base.names().any(|n| !is_annotation(n));
        if kw == Kw::OneOf && branches.len() > 1 && !self.merger().provably_disjoint(branches, ptr) {
            self.relax(
                "oneOf",
                ptr,
                "branches are not provably disjoint: enforced as anyOf (an instance may match several)",
            )?;
        }
        let base = Schema::object(base);
        let mut alts = Vec::with_capacity(branches.len());
        for (i, b) in branches.iter().enumerate() {
            let bptr = format!("{ptr}/{key}/{i}");
            let e = if has_siblings {
                let merged = self.merger().merge_pair(&base, b, &bptr)?;
                let key = serde_json::to_string(&merged).expect("a schema serializes");
                self.memo_rule(key, level, |l, level| l.schema(&merged, &bptr, level))?
            } else {
                self.branch(b, &bptr, level)?
            };
            alts.push(e);
        }
        Ok(choice(alts))
    }

    /// A schema without `$ref`, `allOf`, `anyOf`, `oneOf`.
    fn simple(&mut self, k: &Keywords<'a>, ptr: &str, level: u32) -> Result<Expr, SchemaError> {
        let mut types = self.types(k, ptr)?;
        // `not`: what can be subtracted exactly is; the rest is reported.
        let mut forbidden_props: Vec<&'a str> = Vec::new();
        let mut one_absent: Vec<&'a str> = Vec::new();
        let mut excluded: Option<Excluded<'a>> = None;
        if let Some(not) = &k.not {
            let has_enum = k.has(Kw::Enum) || k.has(Kw::Const);
            match self.doc.view(not) {
                View::Bool(true) => return Ok(never()),
                View::Bool(false) => {}
                View::Object(n) if !has_enum => {
                    let keys: Vec<&str> = n.names().filter(|k| !is_annotation(k)).collect();
                    let required = n.required.as_ref().and_then(Field::ok);
                    if keys.is_empty() {
                        return Ok(never());
                    } else if keys == ["type"] {
                        let not_types = self.types(&n, &format!("{ptr}/not"))?;
                        types
                            .retain(|t| !(not_types.contains(t) || (*t == "integer" && not_types.contains(&"number"))));
                        if types.contains(&"number") && not_types.contains(&"integer") {
                            self.relax(
                                "not",
                                ptr,
                                "`not: {type: integer}` under `number`: integral numbers are not excluded",
                            )?;
                        }
                    } else if keys == ["required"] && required.is_some_and(|a| a.len() == 1) {
                        forbidden_props.push(required.and_then(|r| r[0].as_str()).unwrap_or_default());
                    } else if keys == ["required"] && required.is_some_and(|a| a.len() <= MAX_NOT_REQUIRED) {
                        // At least one of the names is absent: one object variant per name.
                        one_absent = required.into_iter().flatten().filter_map(|x| x.as_str()).collect();
                        one_absent.dedup();
                        if one_absent.is_empty() {
                            types.retain(|t| *t != "object");
                        }
                    } else if let Some(ex) = Excluded::of(&n, &keys) {
                        types.retain(|t| *t != "null" || !ex.null);
                        excluded = Some(ex);
                    } else {
                        self.relax("not", ptr, "the negated schema is not enforced")?;
                    }
                }
                View::Object(_) => {} // decided per value by the enum filter
                View::NotASchema => return Err(Self::invalid(ptr, "`not` must be a schema")),
            }
        }
        if k.has(Kw::Enum) || k.has(Kw::Const) {
            return self.enumeration(k, ptr, level);
        }
        if let Some(if_schema) = &k.if_schema {
            return self.if_then_else(k, if_schema, ptr, level);
        }
        let mut alts = Vec::new();
        for t in TYPES {
            if !types.contains(&t) || (t == "integer" && types.contains(&"number")) {
                continue;
            }
            let e = match t {
                "null" => Expr::literal("null"),
                "boolean" => {
                    let not_b = excluded.as_ref().map_or(&[][..], |x| &x.booleans[..]);
                    let bools = [(true, "true"), (false, "false")].into_iter().filter(|(b, _)| !not_b.contains(b));
                    choice(bools.map(|(_, text)| Expr::literal(text)).collect())
                }
                "object" if !one_absent.is_empty() => {
                    let mut variants = Vec::new();
                    for name in &one_absent {
                        let mut forbidden = forbidden_props.clone();
                        forbidden.push(name);
                        let body = self.object(k, ptr, level, &forbidden)?;
                        variants.push(self.rule_for("obj", body)?);
                    }
                    choice(variants)
                }
                "object" => {
                    let body = self.object(k, ptr, level, &forbidden_props)?;
                    self.rule_for("obj", body)?
                }
                "string" if excluded.as_ref().is_some_and(|x| !x.strings.is_empty()) => {
                    let names = &excluded.as_ref().unwrap().strings;
                    let plain = ![Kw::MinLength, Kw::MaxLength, Kw::Pattern, Kw::Format].iter().any(|kw| k.has(*kw));
                    let (tail, esc) = (self.content_tail(), self.escape_tail());
                    match content_not_in(names, &tail, &esc).filter(|_| plain) {
                        Some(c) => Expr::Seq(vec![Expr::literal("\""), c, Expr::literal("\"")]),
                        None => {
                            self.relax("not", ptr, "excluded strings are not enforced next to string keywords")?;
                            self.string(k, ptr)?
                        }
                    }
                }
                "number" | "integer" if excluded.as_ref().is_some_and(|x| !x.numbers.is_empty()) => {
                    let ex = excluded.as_ref().unwrap();
                    let mut parts = Vec::new();
                    for gap in ex.gaps() {
                        parts.push(self.number_between(k, ptr, t == "integer", gap)?);
                    }
                    choice(parts)
                }
                "array" => {
                    let body = self.array(k, ptr, level)?;
                    self.rule_for("arr", body)?
                }
                "string" => self.string(k, ptr)?,
                "number" => self.number(k, ptr, false)?,
                _ => self.number(k, ptr, true)?,
            };
            alts.push(e);
        }
        Ok(choice(alts))
    }

    /// The admitted types from `type` and `nullable` (all of them when `type` is absent).
    fn types(&mut self, k: &Keywords<'_>, ptr: &str) -> Result<Vec<&'static str>, SchemaError> {
        let mut types: Vec<&'static str> = match &k.types {
            None => TYPES.to_vec(),
            Some(Field::Ok(TypeNames::One(t))) => {
                vec![type_name(t).ok_or_else(|| Self::invalid(ptr, format!("unknown type `{t}`")))?]
            }
            Some(Field::Ok(TypeNames::List(ts))) => {
                let mut v = Vec::new();
                for t in ts {
                    let name = t.ok().and_then(|t| type_name(t));
                    // Named as JSON (quoted), as the array holds it.
                    let json = || serde_json::to_string(t).expect("a JSON value serializes");
                    v.push(name.ok_or_else(|| Self::invalid(ptr, format!("unknown type `{}`", json())))?);
                }
                v
            }
            Some(Field::Wrong(_)) => {
                return Err(Self::invalid(ptr, "`type` must be a string or an array of strings"));
            }
        };
        if matches!(k.nullable, Some(Field::Ok(true))) && !types.contains(&"null") {
            types.push("null");
        }
        Ok(types)
    }

    /// `enum` / `const`: the listed values that satisfy the rest of the schema.
    fn enumeration(&mut self, k: &Keywords<'a>, ptr: &str, level: u32) -> Result<Expr, SchemaError> {
        let mut values: Vec<&'a Value> = match &k.enum_values {
            Some(Field::Ok(v)) => v.clone(),
            Some(Field::Wrong(_)) => return Err(Self::invalid(ptr, "`enum` must be an array")),
            None => k.const_value.into_iter().collect(),
        };
        if let (Some(c), Some(_)) = (k.const_value, &k.enum_values) {
            values.retain(|v| validate::json_equal(v, c));
        }
        let mut rest = k.clone();
        rest.remove(Kw::Enum);
        rest.remove(Kw::Const);
        let rest = Schema::object(rest);
        let mut alts = Vec::new();
        for v in values {
            match validate::validate(&mut self.doc, &rest, v, 0) {
                Verdict::Valid => {}
                Verdict::Invalid => continue,
                Verdict::Unknown(kw) => {
                    self.relax(kw, ptr, "`enum`/`const` values are not checked against this keyword")?;
                }
            }
            crate::util::cancel::check("JSON Schema lowering")?;
            let keyword = if k.enum_values.is_some() { "enum" } else { "const" };
            alts.push(self.value_expr(v, level, keyword, ptr)?);
        }
        Ok(choice(alts))
    }

    /// The JSON pointer of a child keyword.
    pub(super) fn child(ptr: &str, keyword: &str, key: &str) -> String {
        let segment = pointer_segment(key);
        let mut out = String::with_capacity(ptr.len() + keyword.len() + segment.len() + 2);
        for part in [ptr, "/", keyword, "/", &segment] {
            out.push_str(part);
        }
        out
    }
}

/// `{prefix}_{n}` without the formatting machinery (one name per rule).
fn numbered_name(prefix: &str, n: usize) -> String {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let mut name = String::with_capacity(prefix.len() + 1 + digits.len() - at);
    name.push_str(prefix);
    name.push('_');
    name.extend(digits[at..].iter().map(|&d| d as char));
    name
}

fn type_name(t: &str) -> Option<&'static str> {
    TYPES.iter().copied().find(|x| *x == t)
}

#[cfg(test)]
#[test]
fn numbered_names_are_formatted_names() {
    for n in [0, 1, 9, 10, 99, 100, 12345, usize::MAX] {
        assert_eq!(numbered_name("obj", n), format!("obj_{n}"));
    }
}

/// Whether `input` matches `e` (no rule references): sets of positions, for unit tests.
#[cfg(test)]
pub(super) fn expr_matches(e: &Expr, input: &[u8]) -> bool {
    fn ends(e: &Expr, from: &[usize], s: &[u8]) -> Vec<usize> {
        let mut out: Vec<usize> = match e {
            Expr::Empty => from.to_vec(),
            Expr::Bytes(b) => from.iter().filter(|&&i| s[i..].starts_with(b)).map(|&i| i + b.len()).collect(),
            Expr::Class(c) => {
                let r = c.resolved_ranges();
                from.iter()
                    .filter_map(|&i| {
                        let t = (1..=4).find_map(|k| s.get(i..i + k).and_then(|x| std::str::from_utf8(x).ok()))?;
                        let ch = t.chars().next()?;
                        r.iter().any(|&(lo, hi)| lo <= ch as u32 && ch as u32 <= hi).then_some(i + ch.len_utf8())
                    })
                    .collect()
            }
            Expr::Rule(_) | Expr::Token(_) | Expr::TagDispatch(_) => panic!("not a JSON Schema node"),
            Expr::Seq(items) => items.iter().fold(from.to_vec(), |cur, x| ends(x, &cur, s)),
            Expr::Choice(alts) => alts.iter().flat_map(|a| ends(a, from, s)).collect(),
            Expr::Repeat(r) => {
                let mut cur = from.to_vec();
                for _ in 0..r.min {
                    cur = ends(&r.expr, &cur, s);
                }
                let mut acc = cur.clone();
                let mut k = r.min;
                while r.max.is_none_or(|m| k < m) && !cur.is_empty() {
                    cur = ends(&r.expr, &cur, s);
                    cur.retain(|x| !acc.contains(x));
                    acc.extend(cur.iter().copied());
                    k += 1;
                }
                acc
            }
        };
        out.sort_unstable();
        out.dedup();
        out
    }
    ends(e, &[0], input).contains(&input.len())
}
