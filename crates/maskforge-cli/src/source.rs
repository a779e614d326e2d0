//! Shared command-line options: which tokenizer, which grammar.

use std::path::PathBuf;
use std::time::Instant;

use maskforge::{
    load_tokenizer, CompiledGrammar, CompilerConfig, GrammarCompiler, JsonSchemaOptions, MatcherConfig, MatcherError,
    Protocol, ProtocolOptions, TextEncoder, ToolChoice, Vocabulary,
};

use crate::embedded;

/// Where the grammar and the tokenizer come from.
#[derive(clap::Args)]
pub struct GrammarArgs {
    /// `tokenizer.json[.gz]` path, or a name: `llama3`, `qwen3`, `gptoss`, `llama2` (fetched by
    /// scripts/fetch-tokenizers), or `default` (the embedded Qwen3 tokenizer).
    #[arg(long, default_value = "default")]
    pub tokenizer: String,
    /// An EBNF grammar file (XGrammar dialect).
    #[arg(long, conflicts_with_all = ["builtin_json", "schema", "regex"])]
    pub grammar: Option<PathBuf>,
    /// A JSON Schema file.
    #[arg(long, conflicts_with_all = ["builtin_json", "regex"])]
    pub schema: Option<PathBuf>,
    /// JSON Schema options as JSON, e.g. `{"strict_mode": false, "any_whitespace": false}`
    /// (fields of `JsonSchemaOptions`; missing fields take their defaults).
    #[arg(long, requires = "schema")]
    pub schema_options: Option<String>,
    /// An ECMA-262 regular expression the whole output must match.
    #[arg(long, conflicts_with = "builtin_json")]
    pub regex: Option<String>,
    /// The start rule of `--grammar`.
    #[arg(long, default_value = "root")]
    pub root: String,
    /// The builtin JSON grammar.
    #[arg(long)]
    pub builtin_json: bool,
    /// A structural tag file (XGrammar's JSON format: `{"type": "structural_tag", "format": ...}`).
    #[arg(long, conflicts_with_all = ["grammar", "schema", "regex", "builtin_json", "protocol", "protocol_file"])]
    pub structural_tag: Option<PathBuf>,
    /// A model protocol of `protocols/` (`harmony`, `llama`, `qwen`, `qwen_coder`, `kimi`, ...).
    #[arg(long, requires = "tools", group = "protocol_source", conflicts_with_all = ["grammar", "schema", "regex", "builtin_json"])]
    pub protocol: Option<String>,
    /// A protocol file read at run time, in the format of `protocols/*.json` (see
    /// `protocols/README.md`), instead of an embedded `--protocol`.
    #[arg(long, requires = "tools", group = "protocol_source", conflicts_with_all = ["grammar", "schema", "regex", "builtin_json", "protocol"])]
    pub protocol_file: Option<PathBuf>,
    /// The tools of `--protocol`: a JSON array of OpenAI tools, `{"tools": [...]}`, or an object
    /// whose values are tools.
    #[arg(long, requires = "protocol_source")]
    pub tools: Option<PathBuf>,
    /// `auto`, `none`, `required`, a function name, or OpenAI's JSON form.
    #[arg(long, default_value = "auto", requires = "protocol_source")]
    pub tool_choice: String,
    /// Whether the output starts with a reasoning section (`on` / `off`).
    #[arg(long, default_value = "off", value_parser = ["on", "off"], requires = "protocol_source")]
    pub reasoning: String,
    /// Allow at most one tool call.
    #[arg(long, requires = "protocol_source")]
    pub no_parallel_tool_calls: bool,
    /// A grammar saved by `maskforge compile --out FILE` (for the same `--tokenizer`).
    #[arg(long, conflicts_with_all = ["grammar", "schema", "regex", "builtin_json", "structural_tag", "protocol", "protocol_file"])]
    pub compiled: Option<PathBuf>,
    /// Keep compiled grammars in this directory (at most 1 GiB, least recently used out): a
    /// later run with the same source and tokenizer loads the grammar instead of compiling it.
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Stop a compile that takes longer than this many seconds (an error, exit code 2).
    #[arg(long)]
    pub compile_timeout: Option<f64>,
    /// Stop a compile whose automata and grammar grow past this many bytes (an error, exit code
    /// 2) [default: the library's, `maskforge::DEFAULT_MAX_COMPILE_BYTES`, 256 MiB].
    #[arg(long)]
    pub max_compile_bytes: Option<u64>,
}

/// The matcher's bounds on hostile grammars and inputs (`MatcherConfig`), for the commands that
/// run a matcher; going over one is an error (exit code 2).
#[derive(clap::Args)]
pub struct MatcherArgs {
    /// Parser item visits one step (a token, a mask) may take [default: the library's,
    /// `maskforge::DEFAULT_MAX_STEP_ITEMS`].
    #[arg(long)]
    pub max_step_items: Option<u64>,
    /// Bytes of parser state the matcher may hold [default: the library's,
    /// `maskforge::DEFAULT_MAX_STATE_BYTES`].
    #[arg(long)]
    pub max_state_bytes: Option<usize>,
}

impl MatcherArgs {
    /// `base` with the bounds given on the command line.
    pub fn config(&self, mut base: MatcherConfig) -> MatcherConfig {
        if let Some(n) = self.max_step_items {
            base = base.max_step_items(n);
        }
        if let Some(n) = self.max_state_bytes {
            base = base.max_state_bytes(n);
        }
        base
    }
}

/// A matcher error as a command's error message (bad input: exit code 2), saying where.
pub fn step_failure(err: MatcherError, at: &str) -> String {
    format!("{at}: {err}")
}

/// The byte budget of a `--cache-dir` directory.
pub const CACHE_DIR_BYTES: u64 = 1 << 30;

/// The compiler configuration with the `--cache-dir` of a command, if any.
pub fn with_cache_dir(config: CompilerConfig, dir: Option<&PathBuf>) -> CompilerConfig {
    match dir {
        Some(dir) => config.disk_cache(dir, CACHE_DIR_BYTES),
        None => config,
    }
}

/// A compiled grammar with its text encoder and the compile time.
pub struct Loaded {
    pub grammar: CompiledGrammar,
    pub encoder: TextEncoder,
    pub compile_ms: f64,
}

impl Loaded {
    pub fn new(args: &GrammarArgs) -> Result<Self, String> {
        let (vocab, encoder) = if args.tokenizer == "default" {
            embedded::load_default()?
        } else {
            load_tokenizer(&args.tokenizer).map_err(|e| e.to_string())?
        };
        Self::with_tokenizer(args, vocab, encoder)
    }

    /// Compiles the grammar of `args` for a tokenizer of the caller's (`--tokenizer` is not read).
    pub fn with_tokenizer(args: &GrammarArgs, vocab: Vocabulary, encoder: TextEncoder) -> Result<Self, String> {
        if args.schema_options.is_some() && args.schema.is_none() {
            return Err("--schema-options applies to --schema only (a protocol's tool schemas and a \
                        structural tag's `json_schema` parts use the options XGrammar uses for them)"
                .into());
        }
        let mut config = with_cache_dir(CompilerConfig::default(), args.cache_dir.as_ref());
        if let Some(seconds) = args.compile_timeout {
            let limit = std::time::Duration::try_from_secs_f64(seconds)
                .map_err(|_| format!("--compile-timeout {seconds}: expected a number of seconds"))?;
            config = config.compile_timeout(limit);
        }
        if let Some(bytes) = args.max_compile_bytes {
            config = config.max_compile_bytes(bytes);
        }
        let compiler = GrammarCompiler::new(vocab, config);
        let t = Instant::now();
        let grammar = if let Some(path) = &args.compiled {
            let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            CompiledGrammar::deserialize(&bytes, compiler.vocabulary()).map_err(|e| {
                format!("{}: {e} (was it compiled with this --tokenizer, {}?)", path.display(), args.tokenizer)
            })?
        } else if let Some(path) = &args.grammar {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            compiler.compile_grammar_with_root(&text, &args.root).map_err(|e| format!("{}: {e}", path.display()))?
        } else if let Some(path) = &args.schema {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let options: JsonSchemaOptions = match &args.schema_options {
                Some(o) => serde_json::from_str(o).map_err(|e| format!("--schema-options: {e}"))?,
                None => JsonSchemaOptions::default(),
            };
            let g =
                compiler.compile_json_schema_str(&text, &options).map_err(|e| format!("{}: {e}", path.display()))?;
            for r in &g.json_schema_report().expect("compiled from a schema").relaxations {
                eprintln!("note: not enforced exactly: `{}` at {}: {}", r.keyword, r.pointer, r.detail);
            }
            g
        } else if let Some(pattern) = &args.regex {
            compiler.compile_regex(pattern).map_err(|e| format!("--regex: {e}"))?
        } else if let Some(path) = &args.structural_tag {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            compiler.compile_structural_tag_str(&text).map_err(|e| format!("{}: {e}", path.display()))?
        } else if let Some(name) = &args.protocol {
            let (tools, choice, options) = protocol_request(args)?;
            compiler.compile_protocol(name, &tools, &choice, &options).map_err(|e| format!("--protocol {name}: {e}"))?
        } else if let Some(file) = &args.protocol_file {
            let protocol = Protocol::from_file(file).map_err(|e| e.to_string())?;
            let (tools, choice, options) = protocol_request(args)?;
            compiler
                .compile_protocol_with(&protocol, &tools, &choice, &options)
                .map_err(|e| format!("--protocol-file {}: {e}", file.display()))?
        } else if args.builtin_json {
            compiler.compile_builtin_json_grammar().map_err(|e| e.to_string())?
        } else {
            return Err(
                "give --grammar FILE, --schema FILE, --regex PATTERN, --builtin-json, --structural-tag FILE, --protocol NAME --tools FILE, --protocol-file FILE --tools FILE or --compiled FILE"
                    .into(),
            );
        };
        Ok(Loaded { grammar, encoder, compile_ms: t.elapsed().as_secs_f64() * 1e3 })
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        self.encoder.encode_for_matching(text).map_err(|e| e.to_string())
    }
}

/// The tools, tool choice and options of a `--protocol` or `--protocol-file` request.
fn protocol_request(args: &GrammarArgs) -> Result<(Vec<serde_json::Value>, ToolChoice, ProtocolOptions), String> {
    let path = args.tools.as_ref().ok_or("--protocol and --protocol-file need --tools FILE")?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let tools = tools_from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let choice = match serde_json::from_str::<serde_json::Value>(&args.tool_choice) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        _ => serde_json::Value::String(args.tool_choice.clone()),
    };
    let choice = ToolChoice::from_json(&choice).map_err(|e| format!("--tool-choice: {e}"))?;
    let options =
        ProtocolOptions { reasoning: args.reasoning == "on", parallel_tool_calls: !args.no_parallel_tool_calls };
    Ok((tools, choice, options))
}

/// Tools from a file: an array, `{"tools": [...]}`, or an object whose values are tools.
fn tools_from_json(text: &str) -> Result<Vec<serde_json::Value>, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    match v {
        serde_json::Value::Array(a) => Ok(a),
        serde_json::Value::Object(mut o) => match o.remove("tools") {
            Some(serde_json::Value::Array(a)) => Ok(a),
            Some(_) => Err("`tools` must be an array".into()),
            None => Ok(o.into_iter().map(|(_, t)| t).collect()),
        },
        _ => Err("expected an array of tools or an object".into()),
    }
}

/// The `--mode` of the runners: `jit`, `aot`, or a number of states to precompute.
pub fn cache_mode(mode: &str) -> Result<maskforge::MaskCacheMode, String> {
    use maskforge::MaskCacheMode;
    match mode {
        "jit" => Ok(MaskCacheMode::Jit),
        "aot" => Ok(MaskCacheMode::Aot),
        k => k
            .parse()
            .map(MaskCacheMode::Precompute)
            .map_err(|_| format!("--mode {k}: expected `jit`, `aot` or a number of states")),
    }
}

/// Sizes the rayon pool the library uses to `threads` (when given) before anything starts it:
/// the pool reads `RAYON_NUM_THREADS` when it is first used.
pub fn size_thread_pool(threads: Option<usize>) {
    if let Some(n) = threads {
        std::env::set_var("RAYON_NUM_THREADS", n.max(1).to_string());
    }
}
