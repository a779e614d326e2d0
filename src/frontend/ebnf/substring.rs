//! The `Substring("chunk", ...)` macro: any substring (by characters, the empty one included)
//! of the concatenated chunks.
//!
//! The language is that of the text's suffix automaton (Blumer et al.): at most `2n - 1`
//! states and `3n - 4` transitions for `n` characters, where every state accepts because
//! every path from the start spells a substring. Each state becomes one generated rule
//! `s ::= "" | "c" s' | ...`, so the grammar stays linear in the text, where listing the
//! substrings would be quadratic. The automaton is acyclic, so the rules never recurse.

use std::collections::BTreeMap;

use super::macros::{span_of, MacroArgs, MacroValue};
use super::parser::Parser;
use crate::frontend::SyntaxError;
use crate::grammar::Expr;

/// The longest text a `Substring` macro takes, in characters (the automaton has up to
/// twice as many states, each a rule).
pub(super) const MAX_SUBSTRING_CHARS: usize = 100_000;

/// One state of a suffix automaton.
struct State {
    /// The length of the longest string reaching this state.
    len: usize,
    /// The suffix link (`None` for the start).
    link: Option<usize>,
    next: BTreeMap<char, usize>,
}

/// The suffix automaton of `text` (state 0 is the start), built online in linear time.
fn suffix_automaton(text: &[char]) -> Vec<State> {
    let mut states = vec![State { len: 0, link: None, next: BTreeMap::new() }];
    let mut last = 0;
    for &c in text {
        let cur = states.len();
        states.push(State { len: states[last].len + 1, link: None, next: BTreeMap::new() });
        let mut p = Some(last);
        while let Some(q) = p.filter(|&q| !states[q].next.contains_key(&c)) {
            states[q].next.insert(c, cur);
            p = states[q].link;
        }
        states[cur].link = Some(match p {
            None => 0,
            Some(p) => {
                let q = states[p].next[&c];
                if states[p].len + 1 == states[q].len {
                    q
                } else {
                    // Split `q`: a clone holding the shorter strings that now end here too.
                    let clone = states.len();
                    let cloned = State { len: states[p].len + 1, link: states[q].link, next: states[q].next.clone() };
                    states.push(cloned);
                    let mut r = Some(p);
                    while let Some(x) = r.filter(|&x| states[x].next.get(&c) == Some(&q)) {
                        states[x].next.insert(c, clone);
                        r = states[x].link;
                    }
                    states[q].link = Some(clone);
                    clone
                }
            }
        });
        last = cur;
    }
    states
}

impl<'a> Parser<'a> {
    /// `Substring("chunk", ...)`.
    pub(super) fn substring(&mut self, args: MacroArgs<'a>) -> Result<Expr, SyntaxError> {
        if let Some((_, span, _)) = args.named.first() {
            return Err(self.error(*span, "`Substring` takes no named arguments"));
        }
        if args.positional.is_empty() {
            return Err(self.error(args.span, "`Substring` takes at least one string: Substring(\"text\", ...)"));
        }
        let mut text = String::new();
        for v in &args.positional {
            match v {
                MacroValue::Str(bytes, span) => match std::str::from_utf8(bytes) {
                    Ok(chunk) => text.push_str(chunk),
                    Err(_) => return Err(self.error(*span, "a chunk of `Substring` must be UTF-8")),
                },
                other => return Err(self.error(span_of(other), "the arguments of `Substring` are strings")),
            }
        }
        let chars: Vec<char> = text.chars().collect();
        if chars.len() > MAX_SUBSTRING_CHARS {
            let msg = format!("the text of `Substring` has {} characters (at most {MAX_SUBSTRING_CHARS})", chars.len());
            return Err(self.error(args.span, msg));
        }
        let states = suffix_automaton(&chars);
        let ids = self.generated_rules("substring", states.len(), args.span)?;
        for (state, &id) in states.iter().zip(&ids) {
            let mut alts = vec![Expr::Empty];
            for (&c, &target) in &state.next {
                alts.push(Expr::Seq(vec![Expr::literal(c.to_string()), Expr::Rule(ids[target])]));
            }
            self.define_generated(id, Expr::Choice(alts), args.span);
        }
        Ok(Expr::Rule(ids[0]))
    }
}

#[cfg(test)]
mod tests {
    use super::suffix_automaton;

    /// Whether the automaton reads `s` from the start.
    fn reads(states: &[super::State], s: &str) -> bool {
        let mut q = 0;
        s.chars().all(|c| match states[q].next.get(&c) {
            Some(&t) => {
                q = t;
                true
            }
            None => false,
        })
    }

    proptest::proptest! {
        /// The automaton reads exactly the substrings of the text, with at most 2n states.
        #[test]
        fn reads_exactly_the_substrings(text in "[ab\u{e9}\0]{0,12}", probe in "[ab\u{e9}\0]{0,6}") {
            let chars: Vec<char> = text.chars().collect();
            let states = suffix_automaton(&chars);
            proptest::prop_assert!(states.len() <= (2 * chars.len()).max(1));
            proptest::prop_assert_eq!(reads(&states, &probe), text.contains(&probe));
            for i in 0..chars.len() {
                for j in i..=chars.len() {
                    let sub: String = chars[i..j].iter().collect();
                    proptest::prop_assert!(reads(&states, &sub));
                }
            }
        }
    }
}
