//! Lowering: [`Ast`] → [`Grammar`] through [`GrammarBuilder`].
//!
//! Every defined name is declared first, in source order, so that rule ids follow the
//! order of definition (the printer writes rules in id order, which makes
//! `parse(print(g)) == g` hold for every normalized grammar). Then each provisional rule
//! id of the parser is replaced by the builder's id — a flat pass with an explicit stack —
//! and the bodies are defined. The builder's checks (normalization, repetition bounds,
//! empty languages, size limits) run in `build`.
//!
//! Errors the builder would report by name only are reported here with a position:
//! a duplicate rule at its second definition, an undefined rule at its first reference, a
//! missing root at the first rule, an empty language or a size limit at the offending
//! rule's definition. Undefined references are errors even in rules the root cannot
//! reach, as in XGrammar.

use super::parser::{Ast, Symbol};
use super::EbnfError;
use crate::frontend::Span;
use crate::grammar::{Expr, Grammar, GrammarBuilder, GrammarError, RuleId};

/// Builds the grammar rooted at `root` from a parsed text.
pub(super) fn lower(text: &str, ast: Ast<'_>, root: &str) -> Result<Grammar, EbnfError> {
    let at = |span: Span, error: GrammarError| EbnfError::grammar(text, span, error);
    let mut b = GrammarBuilder::new();
    let mut ids = Vec::with_capacity(ast.rules.len());
    for rule in &ast.rules {
        if b.is_declared(&rule.name) {
            return Err(at(rule.name_span, GrammarError::DuplicateRule { name: rule.name.to_string() }));
        }
        ids.push(b.rule(&rule.name));
    }
    let first_rule = ast.rules.first().map_or(Span::new(0, 0), |r| r.name_span);
    if !b.is_declared(root) {
        return Err(at(first_rule, GrammarError::MissingRoot { name: root.to_string() }));
    }
    let mut resolved = Vec::with_capacity(ast.symbols.len());
    for Symbol { name, first_ref } in &ast.symbols {
        let (name, first_ref) = (name.as_ref(), *first_ref);
        if !b.is_declared(name) {
            return Err(at(first_ref, GrammarError::UndefinedRule { name: name.to_string() }));
        }
        resolved.push(b.rule(name));
    }
    let definitions: Vec<(String, Span)> = ast.rules.iter().map(|r| (r.name.to_string(), r.name_span)).collect();
    for (rule, id) in ast.rules.into_iter().zip(ids) {
        let mut body = rule.body;
        resolve(&mut body, &resolved);
        let lookahead = rule.lookahead.map(|mut la| {
            resolve(&mut la, &resolved);
            la
        });
        b.define(id, body, lookahead).map_err(|e| at(rule.name_span, e))?;
        b.set_attrs(id, rule.attrs);
    }
    b.build(root).map_err(|error| {
        let name = match &error {
            GrammarError::EmptyLanguage { name }
            | GrammarError::InvalidRepeat { rule: name, .. }
            | GrammarError::InvalidTagDispatch { rule: name, .. } => Some(name),
            _ => None,
        };
        let span =
            name.and_then(|name| definitions.iter().find(|(n, _)| n == name)).map_or(first_rule, |&(_, span)| span);
        at(span, error)
    })
}

/// Replaces provisional rule ids (indices into the symbol table) with builder ids.
fn resolve(e: &mut Expr, resolved: &[RuleId]) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e {
            // Every provisional id indexes the symbol table `resolved` was built from.
            Expr::Rule(r) => *r = resolved.get(r.index()).copied().unwrap_or(*r),
            Expr::Seq(v) | Expr::Choice(v) => stack.extend(v.iter_mut()),
            Expr::Repeat(r) => stack.push(&mut r.expr),
            Expr::TagDispatch(t) => stack.extend(t.bodies.iter_mut()),
            Expr::Empty | Expr::Bytes(_) | Expr::Class(_) | Expr::Token(_) => {}
        }
    }
}
