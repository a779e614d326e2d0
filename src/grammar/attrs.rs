//! Rule attributes: `name[lazy, max_chars=N] ::= ...` in EBNF (XGrammar's rule attributes).
//!
//! The attributes are part of a rule, kept through the passes, printed back and saved, so a
//! grammar round-trips with them. Two of them change the rule's language and are enforced
//! exactly in the rule's automaton (`fsm/attrs.rs`): `lazy` and `max_chars`. The others do not
//! change which strings a grammar accepts and are kept only so that the grammar prints back
//! as written (`temperature`, `capture`, `stop_capture`), or are refused when compiled
//! because the mask would depend on them and maskforge does not enforce them (`max_tokens`).
//! `docs/design-notes.md` ("EBNF rule attributes") says which attribute does what and why.

/// The attributes of one rule; the default is none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct RuleAttrs {
    /// `lazy`: committed-shortest matching. Each occurrence of the rule ends at the first
    /// position where its body can end: a match of the body that has a shorter match of the
    /// body as a prefix is refused.
    pub lazy: bool,
    /// `max_chars=N`: each occurrence of the rule, once it has read `N` characters (code
    /// points), ends at the first position where its body can end. When the body can end
    /// after every character this is a bound: no match longer than `N` characters.
    pub max_chars: Option<u32>,
    /// `max_tokens=N`: XGrammar's per-occurrence token budget. Depends on tokenization, not
    /// on text, so no automaton over bytes can enforce it; compiling a grammar that uses it
    /// is an error.
    pub max_tokens: Option<u32>,
    /// `temperature=T`: a sampling hint with no effect on masks; kept as the bits of an `f32`
    /// so that rules stay `Eq` and `Hash`.
    pub temperature_bits: Option<u32>,
    /// `capture` / `capture="name"`: the name of a capture group (empty for `capture` alone,
    /// which names it after the rule). No effect on masks.
    pub capture: Option<String>,
    /// `stop_capture="name"`: XGrammar's capture of a stop marker. No effect on masks.
    pub stop_capture: Option<String>,
}

impl RuleAttrs {
    /// Whether no attribute is set.
    pub fn is_empty(&self) -> bool {
        *self == RuleAttrs::default()
    }

    /// Whether an attribute restricts the rule's language (`lazy`, `max_chars`): the rule then
    /// needs an automaton of its own (it is never inlined) and a body without rule references
    /// the automaton builder cannot inline.
    pub fn restricts_language(&self) -> bool {
        self.lazy || self.max_chars.is_some()
    }

    /// `temperature`, if set.
    pub fn temperature(&self) -> Option<f32> {
        self.temperature_bits.map(f32::from_bits)
    }
}

impl std::fmt::Display for RuleAttrs {
    /// The attributes as written between the brackets of `name[...] ::=` (empty when none).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if self.lazy {
            parts.push("lazy".to_string());
        }
        if let Some(n) = self.max_chars {
            parts.push(format!("max_chars={n}"));
        }
        if let Some(n) = self.max_tokens {
            parts.push(format!("max_tokens={n}"));
        }
        if let Some(t) = self.temperature() {
            // `{}` on f32 prints the shortest text that reads back to the same value.
            parts.push(format!("temperature={t}"));
        }
        match self.capture.as_deref() {
            Some("") => parts.push("capture".to_string()),
            Some(name) => parts.push(format!("capture=\"{name}\"")),
            None => {}
        }
        if let Some(name) = &self.stop_capture {
            parts.push(format!("stop_capture=\"{name}\""));
        }
        f.write_str(&parts.join(", "))
    }
}
