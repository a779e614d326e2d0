//! Shared command-line options: which tokenizer, which grammar.

use std::path::PathBuf;
use std::time::Instant;

use maskforge::tokenizer::{load_embedded_default, load_tokenizer, TextEncoder};
use maskforge::{CompiledGrammar, CompilerConfig, GrammarCompiler};

/// Where the grammar and the tokenizer come from.
#[derive(clap::Args)]
pub struct GrammarArgs {
    /// `tokenizer.json[.gz]` path, or a name: `llama3`, `qwen3`, `gptoss`, `llama2` (fetched by
    /// scripts/fetch-tokenizers), or `default` (the embedded Qwen3 tokenizer).
    #[arg(long, default_value = "default")]
    pub tokenizer: String,
    /// An EBNF grammar file (XGrammar dialect).
    #[arg(long, conflicts_with = "builtin_json")]
    pub grammar: Option<PathBuf>,
    /// The start rule of `--grammar`.
    #[arg(long, default_value = "root")]
    pub root: String,
    /// The builtin JSON grammar.
    #[arg(long)]
    pub builtin_json: bool,
}

/// A compiled grammar with its text encoder and the compile time.
pub struct Loaded {
    pub grammar: CompiledGrammar,
    pub encoder: TextEncoder,
    pub compile_ms: f64,
}

impl Loaded {
    pub fn new(args: &GrammarArgs) -> Result<Self, String> {
        let loaded =
            if args.tokenizer == "default" { load_embedded_default() } else { load_tokenizer(&args.tokenizer) };
        let (vocab, encoder) = loaded.map_err(|e| e.to_string())?;
        let compiler = GrammarCompiler::new(vocab, CompilerConfig::default());
        let t = Instant::now();
        let grammar = match (&args.grammar, args.builtin_json) {
            (Some(path), _) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                compiler.compile_grammar_with_root(&text, &args.root).map_err(|e| format!("{}: {e}", path.display()))?
            }
            (None, true) => compiler.compile_builtin_json_grammar().map_err(|e| e.to_string())?,
            (None, false) => return Err("give --grammar FILE or --builtin-json".into()),
        };
        Ok(Loaded { grammar, encoder, compile_ms: t.elapsed().as_secs_f64() * 1e3 })
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        self.encoder.encode_for_matching(text).map_err(|e| e.to_string())
    }
}
