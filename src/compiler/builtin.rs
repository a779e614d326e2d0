//! The builtin JSON grammar.
//!
//! ECMA-404: a JSON text is a value with optional whitespace around it, and whitespace may
//! appear between any two tokens. Strings, numbers and whitespace are written inline as
//! character-level expressions (not separate rules) so that each becomes one deterministic
//! automaton: fewer Earley items per byte, and cache entries that cover whole tokens.

/// The builtin JSON grammar in EBNF.
pub const JSON_GRAMMAR_EBNF: &str = r#"root ::= [ \t\n\r]* value [ \t\n\r]*
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" [ \t\n\r]* (member ([ \t\n\r]* "," [ \t\n\r]* member)* [ \t\n\r]*)? "}"
member ::= string [ \t\n\r]* ":" [ \t\n\r]* value
array ::= "[" [ \t\n\r]* (value ([ \t\n\r]* "," [ \t\n\r]* value)* [ \t\n\r]*)? "]"
string ::= "\"" ([^"\\\u0000-\u001f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))* "\""
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [+\-]? [0-9]+)?
"#;
