//! Lowering a [`Node`] tree to the grammar IR, with XGrammar's automatic end detection: an
//! unlimited format (`any_text`, `triggered_tags`, `dispatch`, and the token-level
//! `any_tokens`, `exclude_token`, `token_triggered_tags`, `token_dispatch`) inside a `tag`
//! may not contain that tag's `end` (string ends for string-level formats, token ends for
//! token-level ones), so the free text stops where the end begins.
//!
//! Every dispatch gets a rule of its own and so does each dispatched body: the automaton
//! builder compiles a `TagDispatch` rule into one Aho-Corasick automaton whose trigger states
//! reference the body rules.

use serde_json::Value;

use super::error::{StructuralTagError as Error, StructuralTagErrorKind as Kind};
use super::format::{Delimiter, Format, Node, SchemaStyle, Tag, TokenRef};
use super::{python_style, xml_style, TokenLookup};
use crate::frontend::ebnf::parse_ebnf;
use crate::frontend::json_schema::{
    json_schema_to_grammar, JsonSchemaOptions, JsonSchemaReport, PropertyOrder, SchemaFragmentCache,
};
use crate::frontend::regex::regex_to_expr;
use crate::grammar::{Expr, GrammarBuilder, RuleId, TagDispatch, TokenSet, Trigger};
use crate::util::hash::FastMap;

/// What the nearest enclosing `tag` ends with.
#[derive(Clone, Debug, Default)]
pub(super) struct Ends {
    text: Vec<Vec<u8>>,
    tokens: Vec<u32>,
}

/// The lowering state: the grammar being built, the vocabulary lookup, the merged JSON
/// Schema report, and rules shared by identical free-text formats.
pub(super) struct Lowerer<'a> {
    pub(super) b: GrammarBuilder,
    tokens: &'a dyn TokenLookup,
    pub(super) report: JsonSchemaReport,
    /// Free-text rules by their excludes, so every `</parameter>` value shares one rule.
    free_text: FastMap<Vec<Vec<u8>>, Expr>,
    /// Imported grammars so far: each gets its own name prefix, so that fresh names never
    /// collide (probing `schema_root_1`, `_2`, ... would be quadratic in the tool count).
    imports: usize,
    /// Lowered JSON Schemas shared with other documents (the same tool in the next request).
    fragments: Option<&'a SchemaFragmentCache>,
}

impl<'a> Lowerer<'a> {
    pub(super) fn new(tokens: &'a dyn TokenLookup, fragments: Option<&'a SchemaFragmentCache>) -> Self {
        Lowerer {
            b: GrammarBuilder::new(),
            fragments,
            tokens,
            report: JsonSchemaReport::default(),
            free_text: FastMap::default(),
            imports: 0,
        }
    }

    pub(super) fn lower(&mut self, node: &Node, ends: &Ends) -> Result<Expr, Error> {
        let p = node.pointer.as_str();
        Ok(match &node.format {
            Format::ConstString(s) => Expr::literal(s),
            Format::JsonSchema { schema, style, any_order, max_whitespace_cnt } => match style {
                SchemaStyle::Json => {
                    let options = JsonSchemaOptions {
                        property_order: if *any_order { PropertyOrder::Any } else { PropertyOrder::Declared },
                        max_whitespace_cnt: *max_whitespace_cnt,
                        ..JsonSchemaOptions::default()
                    };
                    self.json_schema(schema, &options, &join(p, "json_schema"))?
                }
                SchemaStyle::PythonKwargs => python_style::lower(self, schema, p)?,
                _ => xml_style::lower(self, schema, *style, *any_order, p)?,
            },
            Format::Grammar(text) => {
                let g = parse_ebnf(text, "root").map_err(|e| Error::new(&join(p, "grammar"), Kind::Ebnf(e)))?;
                Expr::Rule(self.import(&g, "grammar", p)?)
            }
            Format::Regex(pattern) => {
                regex_to_expr(pattern).map_err(|e| Error::new(&join(p, "pattern"), Kind::Regex(e)))?
            }
            Format::AnyText { excludes } => {
                let mut all: Vec<Vec<u8>> = excludes.iter().map(|s| s.as_bytes().to_vec()).collect();
                all.extend(ends.text.iter().cloned());
                self.free_text(all, p)?
            }
            Format::Sequence(items) => {
                // Only the last element is followed by the enclosing tag's end.
                let n = items.len();
                let mut out = Vec::with_capacity(n);
                let none = Ends::default();
                for (i, item) in items.iter().enumerate() {
                    out.push(self.lower(item, if i + 1 == n { ends } else { &none })?);
                }
                Expr::Seq(out)
            }
            Format::Or(items) => Expr::Choice(items.iter().map(|i| self.lower(i, ends)).collect::<Result<_, _>>()?),
            Format::Repeat { content, min, max } => Expr::repeat(self.lower(content, ends)?, *min, *max),
            Format::Tag(tag) => self.tag(tag)?,
            Format::TriggeredTags { triggers, tags, excludes, at_least_one, stop_after_first } => {
                let mut groups: Vec<Vec<Expr>> = vec![Vec::new(); triggers.len()];
                let mut full = Vec::with_capacity(tags.len());
                for tag in tags {
                    // Where the tag was read (`/tags/i`, or `/structures/i` in the legacy form).
                    let tp = &tag.pointer;
                    let Delimiter::Text(begin) = &tag.begin else {
                        return Err(Error::invalid(
                            &join(tp, "begin"),
                            "tags of `triggered_tags` need a string `begin`",
                        ));
                    };
                    // The longest trigger that starts the tag's begin owns the tag.
                    let owner = (0..triggers.len())
                        .filter(|&t| begin.starts_with(&triggers[t]))
                        .max_by_key(|&t| triggers[t].len())
                        .ok_or_else(|| {
                            Error::invalid(
                                &join(tp, "begin"),
                                format!("`{begin}` starts with none of the triggers {triggers:?}"),
                            )
                        })?;
                    let rest = self.tag_rest(tag)?;
                    full.push(seq(vec![Expr::literal(begin), rest.clone()]));
                    groups[owner].push(seq(vec![Expr::literal(&begin[triggers[owner].len()..]), rest]));
                }
                let tagged: Vec<(Trigger, Vec<Expr>)> =
                    triggers.iter().map(|t| Trigger::Text(t.as_bytes().to_vec())).zip(groups).collect();
                self.triggered(tagged, full, text_excludes(excludes, ends), *at_least_one, *stop_after_first, p)?
            }
            Format::TagsWithSeparator { tags, separator, at_least_one, stop_after_first } => {
                let one = choice(tags.iter().map(|t| self.tag(t)).collect::<Result<_, _>>()?);
                let list = if *stop_after_first || is_never(&one) {
                    one
                } else {
                    // One rule for the tag choice, referenced twice.
                    let rule = self.b.fresh_rule("tags");
                    self.b.define(rule, one, None).map_err(|e| grammar_error(p, e))?;
                    let one = Expr::Rule(rule);
                    Expr::Seq(vec![one.clone(), Expr::star(Expr::Seq(vec![Expr::literal(separator), one]))])
                };
                if *at_least_one {
                    list
                } else if is_never(&list) {
                    Expr::Empty
                } else {
                    Expr::opt(list)
                }
            }
            Format::Dispatch { rules, looped, excludes } => {
                let mut tagged = Vec::with_capacity(rules.len());
                for (pattern, body) in rules {
                    tagged
                        .push((Trigger::Text(pattern.as_bytes().to_vec()), vec![self.lower(body, &Ends::default())?]));
                }
                self.dispatch(tagged, text_excludes(excludes, ends), *looped, p)?
            }
            Format::Token(t) => Expr::Token(TokenSet::of([self.token(t, p)?])),
            Format::ExcludeToken(ex) => self.exclude_token(ex, ends, p)?,
            Format::AnyTokens(ex) => Expr::star(self.exclude_token(ex, ends, p)?),
            Format::TokenTriggeredTags { trigger_tokens, tags, exclude_tokens, at_least_one, stop_after_first } => {
                let ids: Vec<u32> = trigger_tokens.iter().map(|t| self.token(t, p)).collect::<Result<_, _>>()?;
                let mut groups: Vec<Vec<Expr>> = vec![Vec::new(); ids.len()];
                let mut full = Vec::with_capacity(tags.len());
                for tag in tags {
                    // Where the tag was read (`/tags/i`, or `/structures/i` in the legacy form).
                    let tp = &tag.pointer;
                    let Delimiter::Token(begin) = &tag.begin else {
                        return Err(Error::invalid(
                            &join(tp, "begin"),
                            "tags of `token_triggered_tags` need a `token` begin",
                        ));
                    };
                    let id = self.token(begin, &join(tp, "begin"))?;
                    let owner = ids.iter().position(|&t| t == id).ok_or_else(|| {
                        Error::invalid(
                            &join(tp, "begin"),
                            format!("the begin token {id} is not one of the trigger tokens"),
                        )
                    })?;
                    let rest = self.tag_rest(tag)?;
                    full.push(seq(vec![Expr::Token(TokenSet::of([id])), rest.clone()]));
                    groups[owner].push(rest);
                }
                let tagged: Vec<(Trigger, Vec<Expr>)> = ids.iter().map(|&t| Trigger::Token(t)).zip(groups).collect();
                let excludes = self.token_excludes(exclude_tokens, ends, p)?;
                self.triggered(tagged, full, excludes, *at_least_one, *stop_after_first, p)?
            }
            Format::TokenDispatch { rules, looped, exclude_tokens } => {
                let mut tagged = Vec::with_capacity(rules.len());
                for (i, (token, body)) in rules.iter().enumerate() {
                    let id = self.token(token, &join(&join(p, "rules"), &i.to_string()))?;
                    tagged.push((Trigger::Token(id), vec![self.lower(body, &Ends::default())?]));
                }
                let excludes = self.token_excludes(exclude_tokens, ends, p)?;
                self.dispatch(tagged, excludes, *looped, p)?
            }
        })
    }

    /// `begin content end` in full.
    fn tag(&mut self, tag: &Tag) -> Result<Expr, Error> {
        let begin = self.delimiter(&tag.begin, &join(&tag.pointer, "begin"))?;
        let rest = self.tag_rest(tag)?;
        Ok(seq(vec![begin, rest]))
    }

    /// `content end` of a tag, the content knowing the end (automatic end detection).
    fn tag_rest(&mut self, tag: &Tag) -> Result<Expr, Error> {
        let mut ends = Ends::default();
        let mut end_alts = Vec::with_capacity(tag.end.len());
        for (i, d) in tag.end.iter().enumerate() {
            let at = if tag.end.len() == 1 {
                join(&tag.pointer, "end")
            } else {
                join(&join(&tag.pointer, "end"), &i.to_string())
            };
            let e = self.delimiter(d, &at)?;
            match (d, &e) {
                (Delimiter::Text(s), _) if !s.is_empty() => ends.text.push(s.as_bytes().to_vec()),
                (Delimiter::Token(_), Expr::Token(set)) => ends.tokens.extend(set.ranges().iter().map(|r| r.0)),
                _ => {}
            }
            end_alts.push(e);
        }
        let content = self.lower(&tag.content, &ends)?;
        Ok(seq(vec![content, choice(end_alts)]))
    }

    /// The shared part of `triggered_tags` and `token_triggered_tags`: `full` are the tags
    /// with their begins, `tagged` the bodies after each trigger.
    fn triggered(
        &mut self,
        tagged: Vec<(Trigger, Vec<Expr>)>,
        full: Vec<Expr>,
        excludes: Vec<Trigger>,
        at_least_one: bool,
        stop_after_first: bool,
        p: &str,
    ) -> Result<Expr, Error> {
        let tagged: Vec<(Trigger, Vec<Expr>)> =
            tagged.into_iter().map(|(t, bodies)| (t, bodies.into_iter().filter(|b| !is_never(b)).collect())).collect();
        Ok(match (at_least_one, stop_after_first) {
            (false, stop) => self.dispatch(tagged, excludes, !stop, p)?,
            (true, true) => choice(full),
            (true, false) => {
                let first = choice(full);
                let rest = self.dispatch(tagged, excludes, true, p)?;
                seq(vec![first, rest])
            }
        })
    }

    fn delimiter(&mut self, d: &Delimiter, pointer: &str) -> Result<Expr, Error> {
        Ok(match d {
            Delimiter::Text(s) => Expr::literal(s),
            Delimiter::Token(t) => Expr::Token(TokenSet::of([self.token(t, pointer)?])),
        })
    }

    /// A `TagDispatch` rule. Triggers whose group of bodies is empty become excludes (the
    /// text may not contain them), which keeps every body rule non-empty.
    fn dispatch(
        &mut self,
        tagged: impl IntoIterator<Item = (Trigger, Vec<Expr>)>,
        mut excludes: Vec<Trigger>,
        looped: bool,
        pointer: &str,
    ) -> Result<Expr, Error> {
        let mut pairs = Vec::new();
        for (trigger, mut bodies) in tagged {
            if bodies.is_empty() {
                excludes.push(trigger);
                continue;
            }
            let body = choice(std::mem::take(&mut bodies));
            let rule = self.b.fresh_rule("tag_body");
            self.b.define(rule, body, None).map_err(|e| grammar_error(pointer, e))?;
            pairs.push((trigger, Expr::Rule(rule)));
        }
        let mut td = TagDispatch::new(pairs);
        td.excludes = excludes;
        td.loop_after_dispatch = looped;
        let rule = self.b.fresh_rule("dispatch");
        self.b.define(rule, Expr::TagDispatch(Box::new(td)), None).map_err(|e| grammar_error(pointer, e))?;
        Ok(Expr::Rule(rule))
    }

    /// Free text without the `excludes` (a trigger-less dispatch), one rule per exclude set.
    pub(super) fn free_text(&mut self, mut excludes: Vec<Vec<u8>>, pointer: &str) -> Result<Expr, Error> {
        excludes.retain(|e| !e.is_empty());
        excludes.sort();
        excludes.dedup();
        if let Some(e) = self.free_text.get(&excludes) {
            return Ok(e.clone());
        }
        let e = self.dispatch([], excludes.iter().map(|x| Trigger::Text(x.clone())).collect(), true, pointer)?;
        self.free_text.insert(excludes, e.clone());
        Ok(e)
    }

    /// A JSON Schema lowered by the JSON Schema front-end and imported as a rule.
    pub(super) fn json_schema(
        &mut self,
        schema: &Value,
        options: &JsonSchemaOptions,
        pointer: &str,
    ) -> Result<Expr, Error> {
        let (g, report) = match self.fragments {
            Some(cache) => cache.document(schema, options),
            None => json_schema_to_grammar(schema, options),
        }
        .map_err(|e| Error::new(pointer, Kind::Schema(e)))?;
        for r in report.relaxations {
            if !self.report.relaxations.contains(&r) {
                self.report.relaxations.push(r);
            }
        }
        Ok(Expr::Rule(self.import(&g, "schema", pointer)?))
    }

    /// Copies `g` in under the prefix `{kind}{n}` (`{kind}` for the first import).
    fn import(&mut self, g: &crate::grammar::Grammar, kind: &str, pointer: &str) -> Result<RuleId, Error> {
        let prefix = if self.imports == 0 { kind.to_string() } else { format!("{kind}{}", self.imports) };
        self.imports += 1;
        self.b.import(g, &prefix).map_err(|e| grammar_error(pointer, e))
    }

    fn token(&self, t: &TokenRef, pointer: &str) -> Result<u32, Error> {
        match t {
            TokenRef::Id(id) => {
                let n = self.tokens.vocab_size();
                if (*id as usize) < n {
                    Ok(*id)
                } else {
                    Err(Error::new(
                        pointer,
                        Kind::UnknownToken(format!("token id {id} is out of range (vocabulary size {n})")),
                    ))
                }
            }
            TokenRef::Text(s) => self.tokens.token_id(s).ok_or_else(|| {
                Error::new(pointer, Kind::UnknownToken(format!("`{s}` is not a token of the vocabulary")))
            }),
        }
    }

    fn token_excludes(&self, ex: &[TokenRef], ends: &Ends, p: &str) -> Result<Vec<Trigger>, Error> {
        let mut ids: Vec<u32> = ex.iter().map(|t| self.token(t, p)).collect::<Result<_, _>>()?;
        ids.extend(&ends.tokens);
        ids.sort_unstable();
        ids.dedup();
        Ok(ids.into_iter().map(Trigger::Token).collect())
    }

    fn exclude_token(&self, ex: &[TokenRef], ends: &Ends, p: &str) -> Result<Expr, Error> {
        let ids: Vec<u32> = ex.iter().map(|t| self.token(t, p)).collect::<Result<_, _>>()?;
        Ok(Expr::Token(TokenSet::new(ids.into_iter().chain(ends.tokens.iter().copied()).map(|i| (i, i)), true)))
    }
}

/// The empty language (an empty choice).
fn never() -> Expr {
    Expr::Choice(Vec::new())
}

fn is_never(e: &Expr) -> bool {
    match e {
        Expr::Choice(v) => v.iter().all(is_never),
        Expr::Seq(v) => v.iter().any(is_never),
        Expr::Repeat(r) => r.min > 0 && is_never(&r.expr),
        _ => false,
    }
}

/// A sequence, "never" as soon as one item is.
fn seq(items: Vec<Expr>) -> Expr {
    if items.iter().any(is_never) {
        never()
    } else {
        Expr::Seq(items)
    }
}

/// A choice without its "never" alternatives.
fn choice(alts: Vec<Expr>) -> Expr {
    let mut alts: Vec<Expr> = alts.into_iter().filter(|a| !is_never(a)).collect();
    if alts.len() == 1 {
        alts.pop().unwrap()
    } else {
        Expr::Choice(alts)
    }
}

fn text_excludes(own: &[String], ends: &Ends) -> Vec<Trigger> {
    let mut all: Vec<Vec<u8>> = own.iter().map(|s| s.as_bytes().to_vec()).chain(ends.text.iter().cloned()).collect();
    all.retain(|e| !e.is_empty());
    all.sort();
    all.dedup();
    all.into_iter().map(Trigger::Text).collect()
}

pub(super) fn grammar_error(pointer: &str, e: crate::grammar::GrammarError) -> Error {
    Error::new(pointer, Kind::Grammar(e))
}

pub(super) fn join(pointer: &str, key: &str) -> String {
    super::format::join(pointer, key)
}
