//! The data-driven cases of `tests/data/*/*.json` (the format is in `tests/data/README.md`):
//! loading and checking the files, compiling a case's grammar with a given compiler, and
//! turning its inputs into token ids with their expected verdicts.

use std::path::{Path, PathBuf};

use maskforge::{CompiledGrammar, Error, GrammarCompiler, JsonSchemaOptions, Vocabulary};
use serde::Deserialize;
use serde_json::Value;

use crate::support::fixtures;
use crate::support::json_text::{dump, Layout};
use crate::support::small_vocab::{byte_vocab, small_vocab, token_vocab};

/// One case: a grammar, what compiling it must give, and inputs with their verdicts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique within its file.
    pub name: String,
    /// The vocabulary (or vocabularies) to run with; `llama3` when absent.
    #[serde(default)]
    vocab: Option<OneOrMany>,
    /// EBNF text (XGrammar's dialect, root rule `root`), as one string or a list of lines.
    #[serde(default)]
    ebnf: Option<OneOrMany>,
    /// A JSON Schema, compiled with `options`.
    #[serde(default)]
    schema: Option<Value>,
    /// `"default"`, `"spec_compliant"` or an object of `JsonSchemaOptions` fields (the others
    /// at their defaults); `"default"` when absent.
    #[serde(default)]
    options: Option<Value>,
    /// A regular expression.
    #[serde(default)]
    regex: Option<String>,
    /// A structural tag (the whole `{"type": "structural_tag", ...}` object).
    #[serde(default)]
    structural_tag: Option<Value>,
    /// A builtin grammar: `"json"`.
    #[serde(default)]
    builtin: Option<String>,
    /// The first line of the compile error's message: compiling must fail with it.
    #[serde(default)]
    pub error: Option<String>,
    /// The keywords the JSON Schema coverage report relaxes, sorted (`[]`: every keyword is
    /// enforced exactly). Unchecked when absent.
    #[serde(default)]
    pub relaxed_keywords: Option<Vec<String>>,
    /// Inputs accepted token by token, after which the grammar can end.
    #[serde(default)]
    accepted: Vec<Input>,
    /// JSON values, each accepted in three layouts (compact, `", "`/`": "`, indented with
    /// `\uXXXX` escapes).
    #[serde(default)]
    accepted_values: Vec<Value>,
    /// Inputs accepted token by token, after which the grammar cannot end yet.
    #[serde(default)]
    prefixes: Vec<Input>,
    /// Inputs with a token the grammar refuses.
    #[serde(default)]
    rejected: Vec<Input>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn as_vec(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// An input: text (tokenized by the vocabulary) or a list of token texts, one token each.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Input {
    Text(String),
    Tokens(Vec<String>),
}

/// What must happen to an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every token accepted, and the grammar can end.
    Accepted,
    /// Every token accepted, and the grammar cannot end yet.
    Prefix,
    /// Some token refused.
    Rejected,
}

/// An input ready to run: a label for messages, its token ids and its verdict.
#[derive(Debug)]
pub struct TokenInput {
    /// The input as written in the file (with the layout, for JSON values).
    pub label: String,
    /// The token ids.
    pub ids: Vec<u32>,
    /// What must happen.
    pub verdict: Verdict,
}

/// A data file and its cases.
#[derive(Debug)]
pub struct CaseFile {
    /// The path relative to `tests/data`, for messages.
    pub name: String,
    /// Its cases, in file order.
    pub cases: Vec<Case>,
}

/// The data folder.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("data")
}

/// Folders of `tests/data` in another format, with their own runner: the protocol cases
/// (`tests/protocols.rs`: model outputs for a tool set, not grammar + inputs).
const OTHER_FORMATS: &[&str] = &["protocols"];

/// Every `*.json` file in a subfolder of `tests/data` (but [`OTHER_FORMATS`]), sorted by path,
/// parsed and checked. A file that does not parse or holds a malformed case panics with its path.
pub fn load_all() -> Vec<CaseFile> {
    let mut paths = Vec::new();
    let case_dirs = sorted_entries(&data_dir())
        .into_iter()
        .filter(|p| p.is_dir() && !OTHER_FORMATS.iter().any(|o| p.file_name().is_some_and(|n| n == *o)));
    for dir in case_dirs {
        paths.extend(sorted_entries(&dir).into_iter().filter(|p| p.extension().is_some_and(|e| e == "json")));
    }
    // While working on some cases: `MASKFORGE_DATA_CASES=ebnf/rule` runs only the files whose
    // path contains the text.
    if let Ok(only) = std::env::var("MASKFORGE_DATA_CASES") {
        paths.retain(|p| p.display().to_string().contains(&only));
    }
    assert!(!paths.is_empty(), "no case files under {}", data_dir().display());
    paths.iter().map(|p| load(p)).collect()
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    paths.sort();
    paths
}

fn load(path: &Path) -> CaseFile {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let cases: Vec<Case> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not a list of cases: {e}", path.display()));
    let name = path.strip_prefix(data_dir()).unwrap_or(path).display().to_string();
    assert!(!cases.is_empty(), "{name}: no cases");
    for (i, case) in cases.iter().enumerate() {
        if let Err(why) = case.validate() {
            panic!("{name}: case {:?}: {why}", case.name);
        }
        assert!(!cases[..i].iter().any(|c| c.name == case.name), "{name}: two cases named {:?}", case.name);
    }
    CaseFile { name, cases }
}

impl Case {
    /// The vocabulary names to run with.
    pub fn vocabs(&self) -> Vec<&str> {
        self.vocab.as_ref().map_or(vec!["llama3"], OneOrMany::as_vec)
    }

    /// The EBNF text, when the grammar is given as EBNF.
    pub fn ebnf(&self) -> Option<String> {
        self.ebnf.as_ref().map(|e| e.as_vec().join("\n"))
    }

    fn validate(&self) -> Result<(), String> {
        let sources = [
            self.ebnf.is_some(),
            self.schema.is_some(),
            self.regex.is_some(),
            self.structural_tag.is_some(),
            self.builtin.is_some(),
        ];
        if sources.iter().filter(|&&s| s).count() != 1 {
            return Err("needs exactly one of ebnf, schema, regex, structural_tag, builtin".into());
        }
        if self.options.is_some() && self.schema.is_none() {
            return Err("options apply to a schema only".into());
        }
        self.schema_options()?;
        if self.builtin.as_deref().is_some_and(|b| b != "json") {
            return Err(format!("unknown builtin grammar {:?}", self.builtin));
        }
        if self.relaxed_keywords.is_some() && self.schema.is_none() {
            return Err("relaxed_keywords apply to a schema only".into());
        }
        if !self.accepted_values.is_empty() && self.schema.is_none() && self.builtin.is_none() {
            return Err("accepted_values need a JSON grammar (schema or builtin)".into());
        }
        let inputs = self.accepted.len() + self.accepted_values.len() + self.prefixes.len() + self.rejected.len();
        if self.error.is_some() && (inputs > 0 || self.relaxed_keywords.is_some()) {
            return Err("a case with an error has no inputs and no report".into());
        }
        if self.error.is_none() && inputs == 0 && self.relaxed_keywords.is_none() {
            return Err("nothing to check: no error, no report, no inputs".into());
        }
        Ok(())
    }

    fn schema_options(&self) -> Result<JsonSchemaOptions, String> {
        match &self.options {
            None => Ok(JsonSchemaOptions::default()),
            Some(Value::String(preset)) => match preset.as_str() {
                "default" => Ok(JsonSchemaOptions::default()),
                "spec_compliant" => Ok(JsonSchemaOptions::spec_compliant()),
                _ => Err(format!("unknown options preset {preset:?}")),
            },
            Some(fields) => serde_json::from_value(fields.clone()).map_err(|e| format!("options: {e}")),
        }
    }

    /// Compiles the case's grammar with `compiler`.
    pub fn compile(&self, compiler: &GrammarCompiler) -> Result<CompiledGrammar, Error> {
        if let Some(ebnf) = self.ebnf() {
            compiler.compile_grammar(&ebnf)
        } else if let Some(schema) = &self.schema {
            compiler.compile_json_schema(schema, &self.schema_options().expect("validated on load"))
        } else if let Some(regex) = &self.regex {
            compiler.compile_regex(regex)
        } else if let Some(tag) = &self.structural_tag {
            compiler.compile_structural_tag(tag)
        } else {
            compiler.compile_builtin_json_grammar()
        }
    }

    /// The inputs as token ids of the vocabulary `vocab_name`, in file order by verdict.
    pub fn token_inputs(&self, vocab_name: &str, vocab: &Vocabulary) -> Vec<TokenInput> {
        let mut out = Vec::new();
        let mut push = |label: String, ids: Vec<u32>, verdict| out.push(TokenInput { label, ids, verdict });
        for input in &self.accepted {
            push(input.label(), input.ids(vocab_name, vocab), Verdict::Accepted);
        }
        for value in &self.accepted_values {
            for layout in [Layout::Compact, Layout::Python, Layout::IndentedAscii] {
                let text = dump(value, layout);
                push(format!("{text:?} ({layout:?})"), encode(vocab_name, vocab, &text), Verdict::Accepted);
            }
        }
        for input in &self.prefixes {
            push(input.label(), input.ids(vocab_name, vocab), Verdict::Prefix);
        }
        for input in &self.rejected {
            push(input.label(), input.ids(vocab_name, vocab), Verdict::Rejected);
        }
        out
    }

    /// The text inputs' bytes with their verdicts (for checks below the token level; JSON
    /// values left out).
    pub fn byte_inputs(&self) -> Vec<(Vec<u8>, Verdict)> {
        let bytes = |input: &Input| match input {
            Input::Text(t) => t.as_bytes().to_vec(),
            Input::Tokens(ts) => ts.concat().into_bytes(),
        };
        (self.accepted.iter().map(|i| (bytes(i), Verdict::Accepted)))
            .chain(self.prefixes.iter().map(|i| (bytes(i), Verdict::Prefix)))
            .chain(self.rejected.iter().map(|i| (bytes(i), Verdict::Rejected)))
            .collect()
    }
}

impl Input {
    fn label(&self) -> String {
        match self {
            Input::Text(t) => format!("{t:?}"),
            Input::Tokens(ts) => format!("tokens {ts:?}"),
        }
    }

    fn ids(&self, vocab_name: &str, vocab: &Vocabulary) -> Vec<u32> {
        match self {
            Input::Text(t) => encode(vocab_name, vocab, t),
            Input::Tokens(ts) => ts.iter().map(|t| token_by_text(vocab, t)).collect(),
        }
    }
}

/// The vocabulary of a name: a real tokenizer of the fixtures, or one of the synthetic ones of
/// `small_vocab` (`small_vocab`, `token_vocab`, `byte_vocab`).
pub fn vocab_by_name(name: &str) -> Vocabulary {
    match name {
        "small_vocab" => small_vocab(),
        "token_vocab" => token_vocab(),
        "byte_vocab" => byte_vocab(),
        real => fixtures::vocab(real).clone(),
    }
}

/// Token ids spelling `text`: the tokenizer's encoding for a real vocabulary, the longest
/// normal token first for a synthetic one.
fn encode(vocab_name: &str, vocab: &Vocabulary, text: &str) -> Vec<u32> {
    if matches!(vocab_name, "small_vocab" | "token_vocab" | "byte_vocab") {
        greedy_encode(vocab, text.as_bytes()).unwrap_or_else(|| panic!("{vocab_name} cannot spell {text:?}"))
    } else {
        fixtures::encode(vocab_name, text)
    }
}

fn greedy_encode(vocab: &Vocabulary, mut rest: &[u8]) -> Option<Vec<u32>> {
    let mut ids = Vec::new();
    while !rest.is_empty() {
        let id = vocab
            .sorted_token_ids()
            .iter()
            .copied()
            .filter(|&id| rest.starts_with(vocab.token_bytes(id)))
            .max_by_key(|&id| vocab.token_bytes(id).len())?;
        ids.push(id);
        rest = &rest[vocab.token_bytes(id).len()..];
    }
    Some(ids)
}

/// The normal token whose bytes are `text`, else the special token whose text it is.
fn token_by_text(vocab: &Vocabulary, text: &str) -> u32 {
    let normal = vocab.sorted_token_ids().iter().copied().find(|&id| vocab.token_bytes(id) == text.as_bytes());
    normal
        .or_else(|| vocab.token_id(text).filter(|&id| vocab.is_special(id)))
        .unwrap_or_else(|| panic!("no token {text:?} in the vocabulary"))
}
