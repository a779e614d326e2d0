//! The EBNF front-end: XGrammar's grammar dialect → [`Grammar`].
//!
//! [`parse_ebnf`] runs three stages, one file each: the lexer (`lexer.rs`: whitespace,
//! comments, literals and their escapes), the parser (`parser.rs`: rules and expressions,
//! with macro calls in `macros.rs`), and lowering (`lower.rs`: names → rule ids, then
//! [`GrammarBuilder`](crate::GrammarBuilder)'s checks). The printer in `grammar/print.rs`
//! writes this dialect, and `parse_ebnf(&g.to_string(), root) == g` for every grammar `g`
//! the builder produces (except the cases listed in `print.rs`: bytes that are not UTF-8,
//! and class bounds that are surrogates).
//!
//! # The dialect
//!
//! ```text
//! # a comment, to the end of the line
//! root  ::= "{" ws pair ("," ws pair)* "}"        # one or more rules, in any order
//! pair  ::= key ws ":" ws value
//! key   ::= "\"" [a-zA-Z_] [a-zA-Z0-9_]* "\""
//! value ::= [0-9]+ | "true" | "false" | [^"\\\n]{1,8}
//! ws    ::= [ \t\n]*
//! ```
//!
//! * **Rules**: `name ::= body`. Names match `[a-zA-Z_][a-zA-Z0-9_.-]*`. A body runs
//!   until the next `name ::=` or the end of input; newlines are whitespace, so a body may
//!   span lines. Unlike XGrammar, a rule need not start a line.
//! * **Root**: the rule named by `parse_ebnf`'s `root` argument (conventionally `root`).
//! * **Strings**: `"..."` with the escapes `\" \\ \/ \' \? \n \r \t \b \f \a \v \0 \e`,
//!   `\x` + one or more hex digits (read greedily, as XGrammar does), `\u` + exactly 4 and
//!   `\U` + exactly 8 hex digits. Numeric escapes are code points, stored as UTF-8:
//!   `"\xff"` is the bytes `C3 BF`. Surrogates and values above `U+10FFFF` are errors.
//!   `""` is the empty string. A string cannot contain a raw newline.
//! * **Classes**: `[a-z_]`, `[^"\\]`, `[^]` (any code point), `[]` (no code point). The
//!   string escapes work inside, plus `\] \[ \- \^` and XGrammar's `\$ \. \* \+ \( \) \{ \}
//!   \|`. An unescaped `-` is a literal when first, last or right after a range. A
//!   reversed range `[z-a]` is an error. `\d`, `\w`, `\s` are not supported (as in XGrammar).
//! * **Expressions**: juxtaposition is sequence, `|` alternation, `( ... )` grouping, and
//!   `()` the empty string. An alternative cannot be empty (`a ::= "x" |` is an error, as
//!   in XGrammar): write `""`.
//! * **Repetition**: `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}` (bounds fit in `u32`, `m <= n`;
//!   `{m,-1}`, which XGrammar's printer emits, means `{m,}`). One operator per operand, as
//!   in XGrammar: `"a"*?` is an error; write `("a"*)?`.
//! * **Lookahead**: `(= ...)` at the very end of a rule body asserts what follows the rule;
//!   it is stored in [`Rule::lookahead`](crate::Rule::lookahead). Anywhere else it is an
//!   error.
//! * **Macros**: a name *immediately* followed by `(` is a macro call
//!   (`TagDispatch(...)`, `TokenTagDispatch(...)`, `Regex("...", flags="i")`, `Token(...)`,
//!   `ExcludeToken(...)`, `Substring("...", ...)`; see `macros.rs`); an unknown name is an
//!   error. XGrammar reads `foo(...)` as rule `foo` and a group when `foo` is not a macro
//!   name; here, write a space: `foo (...)`.
//! * **Rule attributes**: `name[lazy, max_chars=10] ::= ...` (XGrammar's; `attrs.rs`
//!   parses them; `docs/design-notes.md`, "EBNF rule attributes", says which are enforced
//!   and how). The bracket
//!   must follow the name directly and `::=` must follow the bracket on the same line;
//!   an unknown attribute is an error at its name.
//!
//! Parentheses nest at most 500 deep; the input is otherwise unbounded. Parsing takes
//! time linear in the input and never recurses on the nesting of expressions (groups live
//! on an explicit stack), so no input can overflow the call stack.

mod attrs;
mod lexer;
mod lower;
mod macros;
mod parser;
mod substring;

use crate::frontend::{Position, Span, SyntaxError};
use crate::grammar::{Grammar, GrammarError};

/// Why an EBNF text could not be turned into a grammar.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EbnfError {
    /// The text is not well-formed EBNF.
    #[error(transparent)]
    Syntax(#[from] SyntaxError),
    /// The text is well-formed but the grammar it describes is not (an undefined or
    /// duplicate rule, a missing root, a rule matching nothing, a size limit).
    #[error("{line}:{column}: {error}")]
    Grammar {
        /// What is wrong.
        error: GrammarError,
        /// The 1-based line of the offending rule name: the first reference of an undefined
        /// rule, the second definition of a duplicate one, the definition of a rule whose
        /// language is empty, else the first rule.
        line: usize,
        /// The 1-based column (in characters) of the offending rule name.
        column: usize,
        /// The offending rule name in the text.
        span: Span,
    },
}

impl EbnfError {
    pub(crate) fn grammar(text: &str, span: Span, error: GrammarError) -> EbnfError {
        let Position { line, column } = span.position(text);
        EbnfError::Grammar { error, line, column, span }
    }

    /// Where the error is.
    pub fn position(&self) -> Position {
        match self {
            EbnfError::Syntax(e) => e.position(),
            EbnfError::Grammar { line, column, .. } => Position { line: *line, column: *column },
        }
    }

    /// The offending bytes of the text.
    pub fn span(&self) -> Span {
        match self {
            EbnfError::Syntax(e) => e.span(),
            EbnfError::Grammar { span, .. } => *span,
        }
    }
}

/// Parses a grammar in XGrammar's EBNF dialect (see the [`ebnf`](crate::ebnf) module) and builds it
/// rooted at the rule named `root`.
///
/// Rule ids follow the order of definition in the text.
///
/// # Errors
/// [`EbnfError::Syntax`] for malformed text, [`EbnfError::Grammar`] when the grammar is
/// ill-formed; both carry the line and column.
///
/// # Example
/// ```
/// use maskforge::{parse_ebnf, Expr};
/// let g = parse_ebnf(
///     r#"
///     root  ::= digit+ ("." digit{1,3})?   # a decimal number
///     digit ::= [0-9]
///     "#,
///     "root",
/// )?;
/// assert_eq!(g.rules().len(), 2);
/// let digit = g.rule_by_name("digit").unwrap();
/// assert_eq!(g.rule(digit).body, Expr::class([('0' as u32, '9' as u32)], false));
/// assert_eq!(g.to_string(), "root ::= digit+ (\".\" digit{1,3})?\ndigit ::= [0-9]\n");
///
/// let err = parse_ebnf("root ::= digit\n", "root").unwrap_err();
/// assert_eq!(err.to_string(), "1:10: rule `digit` is referenced but never defined");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_ebnf(text: &str, root: &str) -> Result<Grammar, EbnfError> {
    let ast = parser::parse(text)?;
    lower::lower(text, ast, root)
}

#[cfg(test)]
mod tests;
