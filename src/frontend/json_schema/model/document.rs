//! [`Document`]: the schema document a lowering walks — its objects parsed on first visit,
//! and `$ref` resolved in it (JSON pointers, the document's own `$id`, `$anchor`s).

use std::rc::Rc;

use serde_json::Value;

use super::super::{SchemaError, SchemaErrorKind};
use super::{Keywords, Schema, View};
use crate::util::hash::FastMap;

/// The deepest nesting searched for an `$anchor`.
const MAX_ANCHOR_DEPTH: usize = 64;

/// The document: its root (for `$ref`) and the schema objects parsed so far, by address, so
/// each is parsed once however often the passes visit it.
#[derive(Debug)]
pub(in super::super) struct Document<'a> {
    root: &'a Value,
    parsed: FastMap<usize, Rc<Keywords<'a>>>,
}

impl<'a> Document<'a> {
    pub(in super::super) fn new(root: &'a Value) -> Self {
        Document { root, parsed: FastMap::default() }
    }

    /// The document's root value.
    pub(in super::super) fn root(&self) -> &'a Value {
        self.root
    }

    /// `s` parsed (from the cache when its value was parsed before).
    pub(in super::super) fn view(&mut self, s: &Schema<'a>) -> View<'a> {
        match s {
            Schema::Bool(b) => View::Bool(*b),
            Schema::Object(k) => View::Object(Rc::clone(k)),
            Schema::Json(v) => self.view_json(v),
        }
    }

    /// The document value `v` (a `$ref` target, a sub-schema) parsed.
    pub(in super::super) fn view_json(&mut self, v: &'a Value) -> View<'a> {
        match v {
            Value::Bool(b) => View::Bool(*b),
            Value::Object(m) => {
                // The address identifies the value: the document outlives the cache and
                // does not move.
                let k = self.parsed.entry(v as *const Value as usize).or_insert_with(|| Rc::new(Keywords::parse(m, v)));
                View::Object(Rc::clone(k))
            }
            _ => View::NotASchema,
        }
    }

    /// The document's `$id` (or draft-4 `id`).
    fn id(&self) -> Option<&'a str> {
        self.root.get("$id").or_else(|| self.root.get("id")).and_then(Value::as_str)
    }

    /// Resolves a `$ref` value (`#`, `#/json/pointer`, `#anchor`, `base#/pointer` where `base`
    /// is this document) to the value it names; `ptr` is where the reference is, for the error.
    pub(in super::super) fn resolve(&self, reference: &str, ptr: &str) -> Result<&'a Value, SchemaError> {
        let unresolvable = || SchemaError::new(ptr, SchemaErrorKind::UnresolvableRef(reference.to_string()));
        let fragment = match reference.find('#') {
            Some(i) => &reference[i + 1..],
            None => {
                // A reference to the document itself by its `$id`.
                return if self.id().is_some_and(|id| id.trim_end_matches('#') == reference) {
                    Ok(self.root)
                } else {
                    Err(unresolvable())
                };
            }
        };
        let fragment = percent_decode(fragment);
        if fragment.is_empty() {
            return Ok(self.root);
        }
        if !fragment.starts_with('/') {
            // A plain-name fragment: an `$anchor` (or draft-4 `id: "#name"`) in the document.
            return find_anchor(self.root, &fragment, 0).ok_or_else(unresolvable);
        }
        let mut cur = self.root;
        for seg in fragment[1..].split('/') {
            let seg = seg.replace("~1", "/").replace("~0", "~");
            cur = match cur {
                Value::Object(m) => m.get(&seg).ok_or_else(unresolvable)?,
                Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)).ok_or_else(unresolvable)?,
                _ => return Err(unresolvable()),
            };
        }
        Ok(cur)
    }

    /// Whether a reference names another document (not this one by its `$id`).
    pub(in super::super) fn is_external(&self, reference: &str) -> bool {
        let base = reference.split('#').next().unwrap_or_default();
        !base.is_empty() && base != self.id().unwrap_or_default().trim_end_matches('#')
    }

    /// The canonical pointer (`#/a/b`) of a reference, which identifies its target.
    pub(in super::super) fn ref_key(reference: &str) -> String {
        match reference.find('#') {
            Some(i) => format!("#{}", percent_decode(&reference[i + 1..])),
            None => "#".into(),
        }
    }
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(v) = hex {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn find_anchor<'v>(v: &'v Value, name: &str, depth: usize) -> Option<&'v Value> {
    if depth > MAX_ANCHOR_DEPTH {
        return None;
    }
    match v {
        Value::Object(m) => {
            let hit = m.get("$anchor").and_then(Value::as_str) == Some(name)
                || ["$id", "id"]
                    .iter()
                    .any(|k| m.get(*k).and_then(Value::as_str).is_some_and(|id| id.strip_prefix('#') == Some(name)));
            if hit {
                return Some(v);
            }
            m.values().find_map(|x| find_anchor(x, name, depth + 1))
        }
        Value::Array(a) => a.iter().find_map(|x| find_anchor(x, name, depth + 1)),
        _ => None,
    }
}
