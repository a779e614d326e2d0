//! Parsing XGrammar's structural-tag JSON into a [`Format`] tree, checking every field and
//! remembering each node's JSON pointer for the errors of later stages.

use serde_json::{Map, Value};

use super::error::{StructuralTagError as Error, StructuralTagErrorKind as Kind};
use crate::frontend::json_schema::pointer_segment;
use crate::util::json::kind as json_kind;

/// A token named by id or by its text (resolved against the vocabulary when lowering).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenRef {
    /// A token id.
    Id(u32),
    /// A token's text, e.g. `<|tool_call|>`.
    Text(String),
}

/// How a `json_schema` format writes an object's properties.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaStyle {
    /// Standard JSON.
    Json,
    /// `<parameter=KEY>VALUE</parameter>` (Qwen3-Coder).
    QwenXml,
    /// `<parameter name="KEY">VALUE</parameter>` (MiniMax).
    MinimaxXml,
    /// `<｜DSML｜parameter name="KEY" string="true|false">VALUE</｜DSML｜parameter>`.
    DeepseekXml,
    /// `<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>` (GLM).
    GlmXml,
    /// `<cofl:tool_param name=KEY>VALUE</cofl:tool_param>` (Cohere).
    CohereXml,
    /// `key=value, ...` Python keyword arguments (maskforge extension, Llama 4 pythonic).
    PythonKwargs,
}

/// A delimiter of a `tag`: a string or one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delimiter {
    /// Text.
    Text(String),
    /// One token.
    Token(TokenRef),
}

/// One `tag` format: `begin content end`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tag {
    /// What opens the tag.
    pub begin: Delimiter,
    /// What the tag holds.
    pub content: Box<Node>,
    /// What may close it (one of these).
    pub end: Vec<Delimiter>,
    /// The JSON pointer of the tag.
    pub pointer: String,
}

/// A format with the JSON pointer it was read from.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The format.
    pub format: Format,
    /// Where it is in the input document.
    pub pointer: String,
}

/// One format object of a structural tag (XGrammar's names and semantics).
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)] // the fields are XGrammar's, documented in the module docs
pub enum Format {
    ConstString(String),
    JsonSchema {
        schema: Value,
        style: SchemaStyle,
        any_order: bool,
        max_whitespace_cnt: Option<u32>,
    },
    Grammar(String),
    Regex(String),
    AnyText {
        excludes: Vec<String>,
    },
    Sequence(Vec<Node>),
    Or(Vec<Node>),
    Repeat {
        content: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
    Tag(Tag),
    TriggeredTags {
        triggers: Vec<String>,
        tags: Vec<Tag>,
        excludes: Vec<String>,
        at_least_one: bool,
        stop_after_first: bool,
    },
    TagsWithSeparator {
        tags: Vec<Tag>,
        separator: String,
        at_least_one: bool,
        stop_after_first: bool,
    },
    Dispatch {
        rules: Vec<(String, Node)>,
        looped: bool,
        excludes: Vec<String>,
    },
    Token(TokenRef),
    ExcludeToken(Vec<TokenRef>),
    AnyTokens(Vec<TokenRef>),
    TokenTriggeredTags {
        trigger_tokens: Vec<TokenRef>,
        tags: Vec<Tag>,
        exclude_tokens: Vec<TokenRef>,
        at_least_one: bool,
        stop_after_first: bool,
    },
    TokenDispatch {
        rules: Vec<(TokenRef, Node)>,
        looped: bool,
        exclude_tokens: Vec<TokenRef>,
    },
}

/// Every format type with its fields (besides `type`); the first is the type name.
const FORMATS: &[(&str, &[&str])] = &[
    ("const_string", &["value"]),
    ("json_schema", &["json_schema", "style", "any_order", "max_whitespace_cnt"]),
    // XGrammar's name for a `json_schema` of style `qwen_xml`.
    ("qwen_xml_parameter", &["json_schema"]),
    ("grammar", &["grammar"]),
    ("regex", &["pattern"]),
    ("any_text", &["excludes"]),
    ("sequence", &["elements"]),
    ("or", &["elements"]),
    ("optional", &["content"]),
    ("plus", &["content"]),
    ("star", &["content"]),
    ("repeat", &["content", "min", "max"]),
    ("tag", &["begin", "content", "end"]),
    ("triggered_tags", &["triggers", "tags", "excludes", "at_least_one", "stop_after_first"]),
    ("tags_with_separator", &["tags", "separator", "at_least_one", "stop_after_first"]),
    ("dispatch", &["rules", "loop", "excludes"]),
    ("token", &["token"]),
    ("exclude_token", &["exclude_tokens"]),
    ("any_tokens", &["exclude_tokens"]),
    ("token_triggered_tags", &["trigger_tokens", "tags", "exclude_tokens", "at_least_one", "stop_after_first"]),
    ("token_dispatch", &["rules", "loop", "exclude_tokens"]),
];

/// The deepest nesting of formats accepted (serde_json stops at 128 levels anyway).
const MAX_DEPTH: usize = 128;

/// Parses a whole document `{"type": "structural_tag", "format": {...}}`.
pub fn parse_document(doc: &Value) -> Result<Node, Error> {
    let Value::Object(map) = doc else {
        return Err(Error::invalid("", "a structural tag must be a JSON object"));
    };
    match map.get("type") {
        Some(Value::String(t)) if t == "structural_tag" => {}
        Some(other) => {
            return Err(Error::invalid("/type", format!("expected \"structural_tag\", found {other}")));
        }
        None => return Err(Error::invalid("", "missing field `type` (\"structural_tag\")")),
    }
    if map.contains_key("structures") && !map.contains_key("format") {
        return parse_legacy(map);
    }
    for key in map.keys() {
        if key != "type" && key != "format" {
            return Err(Error::new(
                &format!("/{}", pointer_segment(key)),
                Kind::UnknownField { field: key.clone(), format: "structural_tag".into(), expected: "format".into() },
            ));
        }
    }
    let format = map.get("format").ok_or_else(|| Error::invalid("", "missing field `format`"))?;
    parse_format(format, "/format", 0)
}

/// XGrammar's older structural tag, `{"type": "structural_tag", "structures": [{"begin",
/// "schema", "end"}, ...], "triggers": [...]}` (what `Grammar.from_structural_tag(tags,
/// triggers)` takes, and what OpenAI-compatible servers still accept): free text in which a
/// trigger starts one of the structures beginning with it, `begin` + JSON per `schema` +
/// `end`, then free text again. That is a `triggered_tags` format of JSON Schema tags, with
/// neither `at_least_one` nor `stop_after_first`, so it is read as one.
fn parse_legacy(map: &Map<String, Value>) -> Result<Node, Error> {
    let o = Obj { map, pointer: "", depth: 0 };
    for key in map.keys() {
        if !["type", "structures", "triggers"].contains(&key.as_str()) {
            return Err(Error::new(
                &o.at(key),
                Kind::UnknownField {
                    field: key.clone(),
                    format: "structural_tag (with `structures`)".into(),
                    expected: "structures, triggers".into(),
                },
            ));
        }
    }
    let triggers = o.strings("triggers", true)?;
    if let Some(i) = triggers.iter().position(|t| t.is_empty()) {
        return Err(Error::invalid(&join(&o.at("triggers"), &i.to_string()), "a trigger cannot be empty"));
    }
    let mut tags = Vec::new();
    for (i, item) in o.array("structures", true)?.iter().enumerate() {
        let pointer = join(&o.at("structures"), &i.to_string());
        let Value::Object(fields) = item else {
            return Err(Error::invalid(
                &pointer,
                format!("a structure must be a JSON object, found {}", json_kind(item)),
            ));
        };
        let s = Obj { map: fields, pointer: &pointer, depth: 1 };
        for key in fields.keys() {
            if !["begin", "schema", "end"].contains(&key.as_str()) {
                return Err(Error::new(
                    &s.at(key),
                    Kind::UnknownField {
                        field: key.clone(),
                        format: "structure".into(),
                        expected: "begin, schema, end".into(),
                    },
                ));
            }
        }
        let schema = s.required("schema")?;
        if !schema.is_object() && !schema.is_boolean() {
            return Err(Error::invalid(&s.at("schema"), "a JSON Schema must be an object or a boolean"));
        }
        let format = Format::JsonSchema {
            schema: schema.clone(),
            style: SchemaStyle::Json,
            any_order: false,
            max_whitespace_cnt: None,
        };
        tags.push(Tag {
            begin: Delimiter::Text(s.string("begin")?),
            content: Box::new(Node { format, pointer: s.at("schema") }),
            end: vec![Delimiter::Text(s.string("end")?)],
            pointer,
        });
    }
    let format =
        Format::TriggeredTags { triggers, tags, excludes: Vec::new(), at_least_one: false, stop_after_first: false };
    Ok(Node { format, pointer: String::new() })
}

/// Parses one format object at `pointer`.
pub fn parse_format(v: &Value, pointer: &str, depth: usize) -> Result<Node, Error> {
    if depth > MAX_DEPTH {
        return Err(Error::invalid(pointer, format!("formats nest deeper than {MAX_DEPTH} levels")));
    }
    let Value::Object(map) = v else {
        return Err(Error::invalid(pointer, format!("a format must be a JSON object, found {}", json_kind(v))));
    };
    let ty = match map.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(other) => return Err(Error::invalid(&join(pointer, "type"), format!("expected a string, found {other}"))),
        None => return Err(Error::invalid(pointer, "missing field `type`")),
    };
    let Some(&(_, fields)) = FORMATS.iter().find(|(name, _)| *name == ty) else {
        let expected = FORMATS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ");
        return Err(Error::new(&join(pointer, "type"), Kind::UnknownType { found: ty.into(), expected }));
    };
    for key in map.keys() {
        if key != "type" && !fields.contains(&key.as_str()) {
            return Err(Error::new(
                &join(pointer, key),
                Kind::UnknownField { field: key.clone(), format: ty.into(), expected: fields.join(", ") },
            ));
        }
    }
    let o = Obj { map, pointer, depth };
    let format = match ty {
        "const_string" => Format::ConstString(o.string("value")?),
        "qwen_xml_parameter" => Format::JsonSchema {
            schema: o.schema()?,
            style: SchemaStyle::QwenXml,
            any_order: false,
            max_whitespace_cnt: None,
        },
        "json_schema" => {
            let schema = o.schema()?;
            let style = match o.opt_string("style")?.as_deref() {
                None | Some("json") => SchemaStyle::Json,
                Some("qwen_xml") => SchemaStyle::QwenXml,
                Some("minimax_xml") => SchemaStyle::MinimaxXml,
                Some("deepseek_xml") => SchemaStyle::DeepseekXml,
                Some("glm_xml") => SchemaStyle::GlmXml,
                Some("cohere_xml") => SchemaStyle::CohereXml,
                Some("python_kwargs") => SchemaStyle::PythonKwargs,
                Some(s) => {
                    return Err(Error::invalid(
                        &o.at("style"),
                        format!("unknown style `{s}`; expected json, qwen_xml, minimax_xml, deepseek_xml, glm_xml, cohere_xml or python_kwargs"),
                    ))
                }
            };
            let max_whitespace_cnt = match o.map.get("max_whitespace_cnt") {
                None | Some(Value::Null) => None,
                Some(_) => Some(o.u32("max_whitespace_cnt")?),
            };
            Format::JsonSchema { schema, style, any_order: o.bool("any_order", false)?, max_whitespace_cnt }
        }
        "grammar" => Format::Grammar(o.string("grammar")?),
        "regex" => Format::Regex(o.string("pattern")?),
        "any_text" => Format::AnyText { excludes: o.strings("excludes", false)? },
        "sequence" => Format::Sequence(o.formats("elements")?),
        "or" => {
            let elements = o.formats("elements")?;
            if elements.is_empty() {
                return Err(Error::invalid(&o.at("elements"), "`or` needs at least one element"));
            }
            Format::Or(elements)
        }
        "optional" => Format::Repeat { content: Box::new(o.format("content")?), min: 0, max: Some(1) },
        "plus" => Format::Repeat { content: Box::new(o.format("content")?), min: 1, max: None },
        "star" => Format::Repeat { content: Box::new(o.format("content")?), min: 0, max: None },
        "repeat" => {
            let min = o.u32("min")?;
            let max = match o.required("max")? {
                Value::Number(n) if n.as_i64() == Some(-1) => None,
                _ => Some(o.u32("max")?),
            };
            if max.is_some_and(|m| m < min) {
                return Err(Error::invalid(&o.at("max"), format!("`max` ({}) is below `min` ({min})", max.unwrap())));
            }
            Format::Repeat { content: Box::new(o.format("content")?), min, max }
        }
        "tag" => Format::Tag(parse_tag_fields(&o)?),
        "triggered_tags" => {
            let triggers = o.strings("triggers", true)?;
            if let Some(i) = triggers.iter().position(|t| t.is_empty()) {
                return Err(Error::invalid(&join(&o.at("triggers"), &i.to_string()), "a trigger cannot be empty"));
            }
            Format::TriggeredTags {
                triggers,
                tags: o.tags()?,
                excludes: o.strings("excludes", false)?,
                at_least_one: o.bool("at_least_one", false)?,
                stop_after_first: o.bool("stop_after_first", false)?,
            }
        }
        "tags_with_separator" => Format::TagsWithSeparator {
            tags: o.tags()?,
            separator: o.string("separator")?,
            at_least_one: o.bool("at_least_one", false)?,
            stop_after_first: o.bool("stop_after_first", false)?,
        },
        "dispatch" => {
            let rules = o.rules(|v, p| match v {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                _ => Err(Error::invalid(p, "a dispatch pattern must be a non-empty string")),
            })?;
            Format::Dispatch { rules, looped: o.bool("loop", true)?, excludes: o.strings("excludes", false)? }
        }
        "token" => Format::Token(token_ref(o.required("token")?, &o.at("token"))?),
        "exclude_token" => Format::ExcludeToken(o.token_list("exclude_tokens", false)?),
        "any_tokens" => Format::AnyTokens(o.token_list("exclude_tokens", false)?),
        "token_triggered_tags" => Format::TokenTriggeredTags {
            trigger_tokens: o.token_list("trigger_tokens", true)?,
            tags: o.tags()?,
            exclude_tokens: o.token_list("exclude_tokens", false)?,
            at_least_one: o.bool("at_least_one", false)?,
            stop_after_first: o.bool("stop_after_first", false)?,
        },
        "token_dispatch" => Format::TokenDispatch {
            rules: o.rules(token_ref)?,
            looped: o.bool("loop", true)?,
            exclude_tokens: o.token_list("exclude_tokens", false)?,
        },
        _ => unreachable!("every name of FORMATS is handled"),
    };
    Ok(Node { format, pointer: pointer.to_string() })
}

fn parse_tag_fields(o: &Obj<'_>) -> Result<Tag, Error> {
    let begin = delimiter(o.required("begin")?, &o.at("begin"), o.depth)?;
    let end = match o.required("end")? {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(Error::invalid(&o.at("end"), "`end` needs at least one string"));
            }
            let mut ends = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => ends.push(Delimiter::Text(s.clone())),
                    other => {
                        return Err(Error::invalid(
                            &join(&o.at("end"), &i.to_string()),
                            format!("expected a string, found {}", json_kind(other)),
                        ))
                    }
                }
            }
            ends
        }
        v => vec![delimiter(v, &o.at("end"), o.depth)?],
    };
    Ok(Tag { begin, content: Box::new(o.format("content")?), end, pointer: o.pointer.to_string() })
}

/// A `begin`/`end` value: a string or a `token` format.
fn delimiter(v: &Value, pointer: &str, depth: usize) -> Result<Delimiter, Error> {
    match v {
        Value::String(s) => Ok(Delimiter::Text(s.clone())),
        Value::Object(_) => match parse_format(v, pointer, depth + 1)?.format {
            Format::Token(t) => Ok(Delimiter::Token(t)),
            _ => Err(Error::invalid(pointer, "a tag delimiter must be a string or a `token` format")),
        },
        other => {
            Err(Error::invalid(pointer, format!("expected a string or a `token` format, found {}", json_kind(other))))
        }
    }
}

fn token_ref(v: &Value, pointer: &str) -> Result<TokenRef, Error> {
    match v {
        Value::String(s) if !s.is_empty() => Ok(TokenRef::Text(s.clone())),
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(TokenRef::Id)
            .ok_or_else(|| Error::invalid(pointer, format!("a token id must be a non-negative integer, found {n}"))),
        other => Err(Error::invalid(
            pointer,
            format!("a token must be an id or a non-empty string, found {}", json_kind(other)),
        )),
    }
}

/// A format object being read: typed field access with pointers in the errors.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    pointer: &'a str,
    depth: usize,
}

impl Obj<'_> {
    fn at(&self, key: &str) -> String {
        join(self.pointer, key)
    }
    /// The field `json_schema`: an object or a boolean.
    fn schema(&self) -> Result<Value, Error> {
        let schema = self.required("json_schema")?;
        if !schema.is_object() && !schema.is_boolean() {
            return Err(Error::invalid(&self.at("json_schema"), "a JSON Schema must be an object or a boolean"));
        }
        Ok(schema.clone())
    }
    fn required(&self, key: &str) -> Result<&Value, Error> {
        self.map.get(key).ok_or_else(|| Error::invalid(self.pointer, format!("missing field `{key}`")))
    }
    fn string(&self, key: &str) -> Result<String, Error> {
        match self.required(key)? {
            Value::String(s) => Ok(s.clone()),
            other => Err(Error::invalid(&self.at(key), format!("expected a string, found {}", json_kind(other)))),
        }
    }
    fn opt_string(&self, key: &str) -> Result<Option<String>, Error> {
        if self.map.contains_key(key) {
            self.string(key).map(Some)
        } else {
            Ok(None)
        }
    }
    fn bool(&self, key: &str, default: bool) -> Result<bool, Error> {
        match self.map.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => {
                Err(Error::invalid(&self.at(key), format!("expected a boolean, found {}", json_kind(other))))
            }
        }
    }
    fn u32(&self, key: &str) -> Result<u32, Error> {
        let v = self.required(key)?;
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| Error::invalid(&self.at(key), format!("expected a non-negative integer, found {v}")))
    }
    fn array(&self, key: &str, required: bool) -> Result<&[Value], Error> {
        match self.map.get(key) {
            None if !required => Ok(&[]),
            None => Err(Error::invalid(self.pointer, format!("missing field `{key}`"))),
            Some(Value::Array(a)) => Ok(a),
            Some(other) => Err(Error::invalid(&self.at(key), format!("expected an array, found {}", json_kind(other)))),
        }
    }
    fn strings(&self, key: &str, required: bool) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        for (i, v) in self.array(key, required)?.iter().enumerate() {
            match v {
                Value::String(s) => out.push(s.clone()),
                other => {
                    return Err(Error::invalid(
                        &join(&self.at(key), &i.to_string()),
                        format!("expected a string, found {}", json_kind(other)),
                    ))
                }
            }
        }
        Ok(out)
    }
    fn token_list(&self, key: &str, required: bool) -> Result<Vec<TokenRef>, Error> {
        let base = self.at(key);
        self.array(key, required)?.iter().enumerate().map(|(i, v)| token_ref(v, &join(&base, &i.to_string()))).collect()
    }
    fn format(&self, key: &str) -> Result<Node, Error> {
        parse_format(self.required(key)?, &self.at(key), self.depth + 1)
    }
    fn formats(&self, key: &str) -> Result<Vec<Node>, Error> {
        let base = self.at(key);
        let items = self.array(key, true)?;
        items.iter().enumerate().map(|(i, v)| parse_format(v, &join(&base, &i.to_string()), self.depth + 1)).collect()
    }
    fn tags(&self) -> Result<Vec<Tag>, Error> {
        let base = self.at("tags");
        let mut out = Vec::new();
        for (i, v) in self.array("tags", true)?.iter().enumerate() {
            let p = join(&base, &i.to_string());
            match parse_format(v, &p, self.depth + 1)?.format {
                Format::Tag(t) => out.push(t),
                _ => return Err(Error::invalid(&p, "expected a `tag` format")),
            }
        }
        Ok(out)
    }
    /// `rules`: `[pattern, format]` pairs.
    fn rules<P>(&self, pattern: impl Fn(&Value, &str) -> Result<P, Error>) -> Result<Vec<(P, Node)>, Error> {
        let base = self.at("rules");
        let mut out = Vec::new();
        for (i, v) in self.array("rules", true)?.iter().enumerate() {
            let p = join(&base, &i.to_string());
            match v {
                Value::Array(pair) if pair.len() == 2 => {
                    let pat = pattern(&pair[0], &join(&p, "0"))?;
                    out.push((pat, parse_format(&pair[1], &join(&p, "1"), self.depth + 1)?));
                }
                _ => return Err(Error::invalid(&p, "a rule must be a `[pattern, format]` pair")),
            }
        }
        Ok(out)
    }
}

/// `pointer/key` with the key escaped.
pub(super) fn join(pointer: &str, key: &str) -> String {
    format!("{pointer}/{}", pointer_segment(key))
}
