//! The `maskforge` command: constrained generation, acceptance checks and mask dumps from the
//! shell. Exit codes: 0 success (for `check`: accepted and complete), 1 rejected or incomplete,
//! 2 bad input (malformed grammar, missing file, ...), with the error on stderr.

// The command compiles and drops many small grammars per second (benchmarks, generation):
// mimalloc serves those small allocations faster than the system allocator, configured so
// that no allocation pauses a mask (`maskforge_bench::allocator`). The library itself leaves
// the allocator to the application.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod check;
mod embedded;
mod maskbench;
mod output;
mod run;
mod source;
mod toolbench;
mod walk;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use maskforge::{GrammarMatcher, MatcherConfig, TokenBitmask};
use maskforge_bench::stats::Summary;

use output::{outln, Failure};
use source::{step_failure, GrammarArgs, Loaded, MatcherArgs};

#[derive(Parser)]
#[command(name = "maskforge", version, about = "Structured generation: token masks for grammars")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Constrained generation by a seeded random walk over the allowed tokens.
    Generate {
        #[command(flatten)]
        source: GrammarArgs,
        /// Seed of the random walk.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Stop after this many tokens.
        #[arg(long, default_value_t = 64)]
        max_tokens: usize,
        #[command(flatten)]
        bounds: MatcherArgs,
    },
    /// Tokenizes a text and accepts it token by token.
    Check {
        #[command(flatten)]
        source: GrammarArgs,
        /// The text to check.
        #[arg(long, conflicts_with = "input", allow_hyphen_values = true)]
        text: Option<String>,
        /// A file holding the text to check (read in chunks: any size).
        #[arg(long)]
        input: Option<std::path::PathBuf>,
        /// Spell special-token texts in the input (`<|channel|>`) with ordinary tokens, instead of
        /// reading them as the special tokens (as in a model's output).
        #[arg(long)]
        special_tokens_as_text: bool,
        #[command(flatten)]
        bounds: MatcherArgs,
    },
    /// Runs MaskBench files: compile, then check every instance token by token.
    Maskbench(maskbench::MaskbenchArgs),
    /// The tool-calling benchmark (XGrammar-2 §4.1): static and dynamic tool sets per request.
    Toolbench(toolbench::ToolbenchArgs),
    /// Compiles a grammar and saves it (with `--compiled FILE`, later runs load it instead of
    /// compiling; the file is for the same `--tokenizer` only).
    Compile {
        #[command(flatten)]
        source: GrammarArgs,
        /// Where to write the compiled grammar.
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Generation with a real model (a GGUF file, on the CPU), constrained by the grammar.
    Run(Box<run::RunArgs>),
    /// Prints the allowed tokens after a prefix: their count, then their ids on one line.
    Mask {
        #[command(flatten)]
        source: GrammarArgs,
        /// Text accepted before computing the mask.
        #[arg(long, default_value = "", allow_hyphen_values = true)]
        prefix: String,
        /// Print one allowed token per line, its id and its text (escaped), instead of the ids
        /// on one line.
        #[arg(long)]
        with_text: bool,
        #[command(flatten)]
        bounds: MatcherArgs,
    },
}

fn main() -> ExitCode {
    maskforge_bench::allocator::configure();
    let cli = Cli::parse();
    output::report_panics_in_one_line();
    // A panic is a bug; it still ends like any bad input: one line, exit code 2.
    match std::panic::catch_unwind(|| run(cli.command)) {
        Ok(Ok(code)) => code,
        // The reader of the output went away (`maskforge mask ... | head`): nothing to report.
        Ok(Err(Failure::BrokenPipe)) => ExitCode::SUCCESS,
        Ok(Err(Failure::Message(msg))) => {
            eprintln!("error: {}", output::one_line(&msg));
            ExitCode::from(2)
        }
        Err(_) => ExitCode::from(2),
    }
}

fn run(command: Command) -> Result<ExitCode, Failure> {
    match command {
        Command::Generate { source, seed, max_tokens, bounds } => generate(&source, seed, max_tokens, &bounds),
        Command::Check { source, text, input, special_tokens_as_text, bounds } => {
            let loaded = Loaded::new(&source)?;
            let config = bounds.config(MatcherConfig::default());
            match (text, input) {
                (Some(t), _) => check::check(&loaded, t.as_bytes(), "--text", special_tokens_as_text, config),
                (None, Some(path)) => {
                    let file =
                        std::fs::File::open(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                    check::check(
                        &loaded,
                        std::io::BufReader::new(file),
                        &path.display().to_string(),
                        special_tokens_as_text,
                        config,
                    )
                }
                (None, None) => Err("give --text or --input".into()),
            }
        }
        Command::Mask { source, prefix, with_text, bounds } => mask(&source, &prefix, with_text, &bounds),
        Command::Compile { source, out } => compile(&source, &out),
        Command::Maskbench(args) => maskbench::run(&args),
        Command::Toolbench(args) => toolbench::run(&args),
        Command::Run(args) => run::run(&args),
    }
}

fn generate(args: &GrammarArgs, seed: u64, max_tokens: usize, bounds: &MatcherArgs) -> Result<ExitCode, Failure> {
    let loaded = Loaded::new(args)?;
    let vocab = loaded.grammar.vocabulary();
    let config = bounds.config(MatcherConfig::default());
    let walk = walk::walk(&loaded.grammar, seed, max_tokens, config.clone())?;
    // Special tokens have no bytes; show their text (`<|channel|>`) so protocol output reads.
    let text: String = walk.tokens.iter().map(|&id| vocab.token_text_lossy(id)).collect();
    outln!("{text}");
    outln!(
        "valid: {} ({} tokens, {})",
        if walk.complete { "yes" } else { "no, the token limit came first" },
        walk.tokens.len(),
        if walk.stopped { "ended with a stop token" } else { "the grammar can end here" }
    );
    let cold = Summary::of(&walk.mask_us);
    let warm = Summary::of(&walk::warm_mask_us(&loaded.grammar, &walk.tokens, config));
    outln!(
        "compile {:.2} ms | mask per step: median {:.1} us, p99 {:.1} us, max {:.1} us; the same steps again: \
         median {:.1} us, max {:.1} us",
        loaded.compile_ms,
        cold.p50,
        cold.p99,
        cold.max,
        warm.p50,
        warm.max
    );
    outln!(
        "(the first visit to a parser state builds its token-mask cache entry, which is what the max shows; \
         later visits, in this request or another on the same grammar, reuse it)"
    );
    Ok(if walk.complete { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn compile(args: &GrammarArgs, out: &std::path::Path) -> Result<ExitCode, Failure> {
    let loaded = Loaded::new(args)?;
    let bytes = loaded.grammar.serialize();
    std::fs::write(out, &bytes).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    outln!("wrote {} ({} bytes; compiled in {:.2} ms)", out.display(), bytes.len(), loaded.compile_ms);
    Ok(ExitCode::SUCCESS)
}

fn mask(args: &GrammarArgs, prefix: &str, with_text: bool, bounds: &MatcherArgs) -> Result<ExitCode, Failure> {
    let loaded = Loaded::new(args)?;
    let vocab = loaded.grammar.vocabulary();
    let mut matcher = GrammarMatcher::with_config(&loaded.grammar, bounds.config(MatcherConfig::default()));
    let mut at = 0;
    for (i, (id, len)) in check::Encoding::new(&loaded, false)?.encode(prefix)?.into_iter().enumerate() {
        let accepted =
            matcher.try_accept_token(id).map_err(|e| step_failure(e, &format!("the prefix at token {i} (id {id})")))?;
        if !accepted {
            return Err(format!(
                "the prefix is rejected at token {i} (id {id}, {:?}) at byte {at}, after {:?}",
                vocab.token_text_lossy(id),
                &prefix[..at]
            )
            .into());
        }
        at += len;
    }
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    matcher.try_fill_next_token_bitmask(mask.as_words_mut()).map_err(|e| step_failure(e, "the mask"))?;
    outln!("{}", mask.count_allowed());
    if with_text {
        for id in mask.allowed_ids() {
            outln!("{id}\t{:?}", vocab.token_text_lossy(id as u32));
        }
    } else {
        let ids: Vec<String> = mask.allowed_ids().map(|i| i.to_string()).collect();
        outln!("{}", ids.join(" "));
    }
    Ok(ExitCode::SUCCESS)
}
