//! The EBNF parser: tokens → [`Ast`], a list of rule definitions whose bodies are already
//! IR expressions.
//!
//! Rule references cannot be resolved while parsing (a rule may be used before it is
//! defined), so a reference `foo` becomes `Expr::Rule(s)` where `s` is a *provisional* id:
//! the index of `foo` in [`Ast::symbols`], the table of referenced names in order of first
//! reference. Lowering (`lower.rs`) swaps provisional ids for the builder's ids. Building
//! IR directly, instead of a separate syntax tree, keeps one tree shape for the whole
//! front-end and lets lowering run as a flat, non-recursive pass.
//!
//! Rule bodies are parsed without recursion: open groups live on an explicit stack of
//! [`Frame`]s (one per `(`), limited to [`MAX_NESTING`] levels, so that no input can
//! overflow the call stack. Macro arguments (`Name(...)`, see `macros.rs`)
//! nest through tuples only and share the same limit.
//!
//! A rule body ends where the next `name ::=` begins or at the end of input; newlines are
//! ordinary whitespace. The grammar of a body:
//!
//! ```text
//! body      ::= choice lookahead?
//! lookahead ::= "(=" choice ")"                       # only at the very end of a rule
//! choice    ::= sequence ("|" sequence)*
//! sequence  ::= postfix+
//! postfix   ::= atom ("*" | "+" | "?" | "{" n "}" | "{" n ",}" | "{" n "," m "}")?
//! atom      ::= string | class | name | macro-call | "(" choice? ")"
//! ```

use std::collections::{HashMap, VecDeque};

use super::lexer::{Lexer, Token, TokenKind};
use crate::frontend::{Span, SyntaxError};
use crate::grammar::{Expr, RuleId};

/// The deepest nesting of parentheses (groups, lookaheads, macro tuples) accepted.
/// Exceeding it is a syntax error; it keeps memory and later passes' work per level
/// bounded. XGrammar's limit is 1,000; ours is lower because one level of parentheses can
/// add up to three levels of IR (choice, sequence, repetition), and the IR caps rule depth
/// at `GrammarLimits::max_depth` (1,000 by default).
pub(super) const MAX_NESTING: usize = 500;

/// One parsed rule definition.
#[derive(Debug)]
pub(super) struct RuleAst<'a> {
    /// The rule's name.
    pub(super) name: &'a str,
    /// Where the name is written in the definition.
    pub(super) name_span: Span,
    /// The body; `Expr::Rule` ids index [`Ast::symbols`].
    pub(super) body: Expr,
    /// The lookahead assertion, if any, with the same provisional ids.
    pub(super) lookahead: Option<Expr>,
}

/// A name used as a rule reference.
#[derive(Debug)]
pub(super) struct Symbol<'a> {
    /// The referenced name.
    pub(super) name: &'a str,
    /// Its first reference in the text.
    pub(super) first_ref: Span,
}

/// A parsed grammar file.
#[derive(Debug)]
pub(super) struct Ast<'a> {
    /// The definitions in source order.
    pub(super) rules: Vec<RuleAst<'a>>,
    /// Referenced names in order of first reference; provisional rule ids index this.
    pub(super) symbols: Vec<Symbol<'a>>,
}

/// Parses a whole grammar text.
pub(super) fn parse(text: &str) -> Result<Ast<'_>, SyntaxError> {
    Parser::new(text).grammar()
}

/// What an open group is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameKind {
    /// The rule body itself (bottom of the stack).
    Body,
    /// `( ... )`
    Group,
    /// `(= ... )`
    Lookahead,
}

/// An open group: the alternatives finished so far and the sequence being read.
#[derive(Debug)]
struct Frame {
    kind: FrameKind,
    /// The `(`, `(=`, or for the body the `::=`.
    open: Span,
    alts: Vec<Expr>,
    seq: Vec<Expr>,
}

impl Frame {
    fn new(kind: FrameKind, open: Span) -> Self {
        Frame { kind, open, alts: Vec::new(), seq: Vec::new() }
    }
}

/// Turns the items of a non-empty sequence (or alternatives of a choice) into one node,
/// without a wrapper around a single item.
fn collect(mut items: Vec<Expr>, wrap: fn(Vec<Expr>) -> Expr) -> Expr {
    if items.len() == 1 {
        items.pop().unwrap_or(Expr::Empty)
    } else {
        wrap(items)
    }
}

/// The recursive-descent-with-a-stack parser over a [`Lexer`].
#[derive(Debug)]
pub(super) struct Parser<'a> {
    lexer: Lexer<'a>,
    /// Tokens peeked but not consumed (at most two).
    peeked: VecDeque<Token<'a>>,
    symbols: Vec<Symbol<'a>>,
    /// Name → provisional id. A std `HashMap` (SipHash): names are chosen by whoever
    /// writes the grammar, so the table must resist collision flooding.
    symbol_ids: HashMap<&'a str, RuleId>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser { lexer: Lexer::new(text), peeked: VecDeque::new(), symbols: Vec::new(), symbol_ids: HashMap::new() }
    }

    /// The source text.
    pub(super) fn text(&self) -> &'a str {
        self.lexer.text()
    }

    fn fill(&mut self, n: usize) -> Result<(), SyntaxError> {
        while self.peeked.len() < n {
            let t = self.lexer.next_token()?;
            self.peeked.push_back(t);
        }
        Ok(())
    }

    /// The next token, not consumed.
    pub(super) fn peek(&mut self) -> Result<&Token<'a>, SyntaxError> {
        self.fill(1)?;
        Ok(&self.peeked[0])
    }

    /// The token after the next one, not consumed.
    pub(super) fn peek2(&mut self) -> Result<&Token<'a>, SyntaxError> {
        self.fill(2)?;
        Ok(&self.peeked[1])
    }

    /// Consumes and returns the next token.
    pub(super) fn bump(&mut self) -> Result<Token<'a>, SyntaxError> {
        self.fill(1)?;
        let t = self.peeked.pop_front();
        // `fill(1)` guarantees a token; the fallback is never taken.
        Ok(t.unwrap_or(Token { kind: TokenKind::Eof, span: Span::new(self.text().len(), self.text().len()) }))
    }

    /// An "expected X, found <token>" error at `tok`.
    pub(super) fn expected(&self, tok: &Token<'_>, expected: impl Into<String>) -> SyntaxError {
        SyntaxError::expecting(self.text(), tok.span, expected, Some(&tok.kind.describe()))
    }

    /// A free-form error at `span`.
    pub(super) fn error(&self, span: Span, message: impl Into<String>) -> SyntaxError {
        SyntaxError::new(self.text(), span, message)
    }

    fn grammar(mut self) -> Result<Ast<'a>, SyntaxError> {
        let mut rules = Vec::new();
        loop {
            let tok = self.bump()?;
            let name = match tok.kind {
                TokenKind::Eof if rules.is_empty() => return Err(self.expected(&tok, "a rule `name ::= ...`")),
                TokenKind::Eof => break,
                TokenKind::Ident(name) => name,
                _ => return Err(self.expected(&tok, "a rule name")),
            };
            let assign = self.bump()?;
            if assign.kind != TokenKind::Assign {
                return Err(self.expected(&assign, format!("`::=` after rule name `{name}`")));
            }
            let (body, lookahead) = self.rule_body(assign.span)?;
            rules.push(RuleAst { name, name_span: tok.span, body, lookahead });
        }
        Ok(Ast { rules, symbols: self.symbols })
    }

    /// Whether the next token ends the current rule: the end of input, or a name followed
    /// by `::=` (the start of the next rule).
    fn at_rule_end(&mut self) -> Result<bool, SyntaxError> {
        Ok(match self.peek()?.kind {
            TokenKind::Eof => true,
            TokenKind::Ident(_) => self.peek2()?.kind == TokenKind::Assign,
            _ => false,
        })
    }

    /// Parses a rule body after `::=` up to the end of the rule.
    fn rule_body(&mut self, assign: Span) -> Result<(Expr, Option<Expr>), SyntaxError> {
        let mut stack = vec![Frame::new(FrameKind::Body, assign)];
        let mut lookahead = None;
        // The name just read as a reference, for the "`=` instead of `::=`" diagnosis.
        let mut prev_ident: Option<&'a str> = None;
        loop {
            if self.at_rule_end()? {
                break;
            }
            let tok = self.bump()?;
            let ident = if let TokenKind::Ident(name) = tok.kind { Some(name) } else { None };
            let atom = match tok.kind {
                TokenKind::Str(bytes) => Expr::literal(bytes),
                TokenKind::Class(class) => Expr::Class(class),
                TokenKind::Ident(name) => {
                    let next = self.peek()?;
                    if next.kind == TokenKind::LParen && next.span.start == tok.span.end {
                        self.macro_call(name, tok.span)?
                    } else {
                        self.reference(name, tok.span)?
                    }
                }
                TokenKind::LParen | TokenKind::LookaheadParen => {
                    let kind = if tok.kind == TokenKind::LParen { FrameKind::Group } else { FrameKind::Lookahead };
                    let top = stack.last().map_or(FrameKind::Body, |f| f.kind);
                    if kind == FrameKind::Lookahead {
                        if top != FrameKind::Body {
                            return Err(
                                self.error(tok.span, "lookahead assertion is only allowed at the end of a rule")
                            );
                        }
                        if let Some(frame) = stack.last().filter(|f| f.seq.is_empty()) {
                            return Err(self.empty_sequence(frame, &tok));
                        }
                    }
                    if stack.len() > MAX_NESTING {
                        return Err(self.error(
                            tok.span,
                            format!("parentheses nested too deeply: the limit is {MAX_NESTING} levels"),
                        ));
                    }
                    stack.push(Frame::new(kind, tok.span));
                    prev_ident = None;
                    continue;
                }
                TokenKind::RParen => {
                    let frame = match stack.pop() {
                        Some(frame) if frame.kind != FrameKind::Body => frame,
                        _ => return Err(self.error(tok.span, "unmatched `)`")),
                    };
                    let (kind, open) = (frame.kind, frame.open);
                    let e = self.close(frame, &tok)?;
                    if kind == FrameKind::Lookahead {
                        if !self.at_rule_end()? {
                            return Err(self.error(open, "lookahead assertion is only allowed at the end of a rule"));
                        }
                        lookahead = Some(e);
                        break;
                    }
                    e
                }
                TokenKind::Pipe => {
                    let Some(frame) = stack.last_mut() else { break };
                    if frame.seq.is_empty() {
                        let frame = &stack[stack.len() - 1];
                        return Err(self.empty_sequence(frame, &tok));
                    }
                    let seq = std::mem::take(&mut frame.seq);
                    frame.alts.push(collect(seq, Expr::Seq));
                    prev_ident = None;
                    continue;
                }
                TokenKind::Star | TokenKind::Plus | TokenKind::Question | TokenKind::LBrace => {
                    let op = tok.kind.describe();
                    return Err(SyntaxError::expecting(self.text(), tok.span, format!("an element before {op}"), None));
                }
                TokenKind::Equal if prev_ident.is_some() => {
                    let name = prev_ident.unwrap_or_default();
                    return Err(self.expected(&tok, format!("`::=` after rule name `{name}`")));
                }
                _ => return Err(self.expected(&tok, "an element (string, character class, rule name or group)")),
            };
            prev_ident = ident;
            let atom = self.postfix(atom)?;
            if let Some(frame) = stack.last_mut() {
                frame.seq.push(atom);
            }
        }
        if let Some(open) = stack.iter().rev().find(|f| f.kind != FrameKind::Body) {
            let what = if open.kind == FrameKind::Group { "(" } else { "(=" };
            let message = format!("a matching `)` for this `{what}` before the end of the rule");
            return Err(SyntaxError::expecting(self.text(), open.open, message, None));
        }
        let end = self.peek()?.clone();
        let body = match stack.pop() {
            Some(frame) => self.close(frame, &end)?,
            None => Expr::Empty,
        };
        Ok((body, lookahead))
    }

    /// The error for a sequence that is empty where an element is required; `at` is the
    /// token found instead.
    fn empty_sequence(&self, frame: &Frame, at: &Token<'_>) -> SyntaxError {
        let expected = if !frame.alts.is_empty() {
            "an element after `|`"
        } else {
            match frame.kind {
                FrameKind::Body => "a rule body after `::=`",
                FrameKind::Group => "an element after `(`",
                FrameKind::Lookahead => "an element in the lookahead assertion",
            }
        };
        self.expected(at, expected)
    }

    /// Finishes an open group at token `at` (its `)` or the end of the rule).
    fn close(&self, mut frame: Frame, at: &Token<'_>) -> Result<Expr, SyntaxError> {
        if frame.seq.is_empty() {
            // `()` is the empty string, as in XGrammar; other empty sequences are errors.
            if frame.kind == FrameKind::Group && frame.alts.is_empty() {
                return Ok(Expr::Empty);
            }
            return Err(self.empty_sequence(&frame, at));
        }
        let seq = collect(frame.seq, Expr::Seq);
        frame.alts.push(seq);
        Ok(collect(frame.alts, Expr::Choice))
    }

    /// A reference to rule `name`, with a provisional id.
    pub(super) fn reference(&mut self, name: &'a str, span: Span) -> Result<Expr, SyntaxError> {
        if let Some(&id) = self.symbol_ids.get(name) {
            return Ok(Expr::Rule(id));
        }
        if self.symbols.len() >= u32::MAX as usize {
            return Err(self.error(span, "too many distinct rule names"));
        }
        let id = RuleId::new(self.symbols.len());
        self.symbols.push(Symbol { name, first_ref: span });
        self.symbol_ids.insert(name, id);
        Ok(Expr::Rule(id))
    }

    /// Applies a repetition operator following `atom`, if any. XGrammar allows one
    /// operator per atom; so do we, with a clearer message for `x*?` and the like.
    fn postfix(&mut self, atom: Expr) -> Result<Expr, SyntaxError> {
        let (min, max) = match self.peek()?.kind {
            TokenKind::Star => (0, None),
            TokenKind::Plus => (1, None),
            TokenKind::Question => (0, Some(1)),
            TokenKind::LBrace => {
                let (min, max) = self.bounds()?;
                return self.single_postfix(Expr::repeat(atom, min, max));
            }
            _ => return Ok(atom),
        };
        self.bump()?;
        self.single_postfix(Expr::repeat(atom, min, max))
    }

    /// Rejects a second repetition operator right after one.
    fn single_postfix(&mut self, e: Expr) -> Result<Expr, SyntaxError> {
        let next = self.peek()?;
        if matches!(next.kind, TokenKind::Star | TokenKind::Plus | TokenKind::Question | TokenKind::LBrace) {
            let (op, span) = (next.kind.describe(), next.span);
            return Err(self.error(
                span,
                format!("{op} cannot follow another repetition operator; use parentheses, as in `(x*)?`"),
            ));
        }
        Ok(e)
    }

    /// Parses `{m}`, `{m,}` or `{m,n}`.
    fn bounds(&mut self) -> Result<(u32, Option<u32>), SyntaxError> {
        let open = self.bump()?;
        let min = self.bound()?;
        let tok = self.bump()?;
        let (max, close) = match tok.kind {
            TokenKind::RBrace => (Some(min), tok.span),
            TokenKind::Comma => {
                let tok = self.bump()?;
                match tok.kind {
                    TokenKind::RBrace => (None, tok.span),
                    // XGrammar prints an unbounded repetition as `{m, -1}`; accept it.
                    TokenKind::Int("-1") => {
                        let close = self.bump()?;
                        if close.kind != TokenKind::RBrace {
                            return Err(self.expected(&close, "`}` after the repetition bounds"));
                        }
                        (None, close.span)
                    }
                    TokenKind::Int(_) => {
                        let max = self.number(&tok)?;
                        let close = self.bump()?;
                        if close.kind != TokenKind::RBrace {
                            return Err(self.expected(&close, "`}` after the repetition bounds"));
                        }
                        (Some(max), close.span)
                    }
                    _ => return Err(self.expected(&tok, "an upper bound or `}` after `,`")),
                }
            }
            _ => return Err(self.expected(&tok, "`,` or `}` in repetition bounds")),
        };
        if let Some(max) = max.filter(|&max| max < min) {
            let span = Span::new(open.span.start, close.end);
            let written = &self.text()[span.start..span.end];
            return Err(self.error(
                span,
                format!("invalid repetition bounds `{written}`: the lower bound {min} exceeds the upper bound {max}"),
            ));
        }
        Ok((min, max))
    }

    /// The lower bound of a repetition.
    fn bound(&mut self) -> Result<u32, SyntaxError> {
        let tok = self.bump()?;
        match tok.kind {
            TokenKind::Int(_) => self.number(&tok),
            _ => Err(self.expected(&tok, "a number in repetition bounds")),
        }
    }

    /// The value of an integer token used as a repetition bound.
    fn number(&self, tok: &Token<'_>) -> Result<u32, SyntaxError> {
        let TokenKind::Int(digits) = tok.kind else {
            return Err(self.expected(tok, "a number"));
        };
        if digits.starts_with('-') {
            return Err(self.error(tok.span, format!("repetition bound `{digits}` is negative")));
        }
        digits.parse::<u32>().map_err(|_| {
            self.error(tok.span, format!("repetition bound `{digits}` is too large: the limit is {}", u32::MAX))
        })
    }
}
