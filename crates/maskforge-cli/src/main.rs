//! The `maskforge` command: constrained generation, acceptance checks and mask dumps from the
//! shell. Exit codes: 0 success (for `check`: accepted and complete), 1 rejected or incomplete,
//! 2 bad input (malformed grammar, missing file, ...), with the error on stderr.

// The command compiles and drops many small grammars per second (benchmarks, generation):
// mimalloc serves those small allocations faster than the system allocator. The library
// itself leaves the allocator to the application.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod embedded;
mod maskbench;
mod source;
mod toolbench;

use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use maskforge::{GrammarMatcher, TokenBitmask};
use maskforge_bench::stats::Summary;
use rand::{Rng, SeedableRng};

use source::{GrammarArgs, Loaded};

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
    },
    /// Tokenizes a text and accepts it token by token.
    Check {
        #[command(flatten)]
        source: GrammarArgs,
        /// The text to check.
        #[arg(long, conflicts_with = "input")]
        text: Option<String>,
        /// A file holding the text to check.
        #[arg(long)]
        input: Option<std::path::PathBuf>,
    },
    /// Runs MaskBench files: compile, then check every instance token by token.
    Maskbench(maskbench::MaskbenchArgs),
    /// The tool-calling benchmark (XGrammar-2 §4.1): static and dynamic tool sets per request.
    Toolbench(toolbench::ToolbenchArgs),
    /// Prints the allowed tokens after a prefix: their count, then their ids on one line.
    Mask {
        #[command(flatten)]
        source: GrammarArgs,
        /// Text accepted before computing the mask.
        #[arg(long, default_value = "")]
        prefix: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::Generate { source, seed, max_tokens } => generate(&source, seed, max_tokens),
        Command::Check { source, text, input } => {
            let text = match (text, input) {
                (Some(t), _) => t,
                (None, Some(path)) => {
                    std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
                }
                (None, None) => return Err("give --text or --input".into()),
            };
            check(&source, &text)
        }
        Command::Mask { source, prefix } => mask(&source, &prefix),
        Command::Maskbench(args) => maskbench::run(&args),
        Command::Toolbench(args) => toolbench::run(&args),
    }
}

fn generate(args: &GrammarArgs, seed: u64, max_tokens: usize) -> Result<ExitCode, String> {
    let loaded = Loaded::new(args)?;
    let mut matcher = GrammarMatcher::new(&loaded.grammar);
    let vocab = loaded.grammar.vocabulary();
    let mut mask = TokenBitmask::new(vocab.vocab_size());
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut out: Vec<u8> = Vec::new();
    let mut mask_us = Vec::new();
    let mut allowed = Vec::new();
    let mut stopped = false;
    for _ in 0..max_tokens {
        let t = Instant::now();
        matcher.fill_next_token_bitmask(mask.as_words_mut());
        mask_us.push(t.elapsed().as_secs_f64() * 1e6);
        allowed.clear();
        allowed.extend(mask.allowed_ids().map(|i| i as u32));
        if allowed.is_empty() {
            return Err("no token is allowed: the grammar cannot continue with this vocabulary".into());
        }
        let id = allowed[rng.random_range(0..allowed.len())];
        assert!(matcher.accept_token(id), "a token allowed by the mask must be accepted");
        if matcher.is_terminated() {
            stopped = true;
            break;
        }
        // Special tokens have no bytes; show their text (`<|channel|>`) so protocol output reads.
        out.extend_from_slice(vocab.token_text_lossy(id).as_bytes());
    }
    println!("{}", String::from_utf8_lossy(&out));
    let s = Summary::of(&mask_us);
    println!(
        "compile {:.2} ms | {} tokens ({}) | mask median {:.1} us, p99 {:.1} us, max {:.1} us",
        loaded.compile_ms,
        mask_us.len(),
        if stopped { "ended with a stop token" } else { "token limit reached" },
        s.p50,
        s.p99,
        s.max
    );
    Ok(ExitCode::SUCCESS)
}

fn check(args: &GrammarArgs, text: &str) -> Result<ExitCode, String> {
    let loaded = Loaded::new(args)?;
    let ids = loaded.encode(text)?;
    let vocab = loaded.grammar.vocabulary();
    let mut matcher = GrammarMatcher::new(&loaded.grammar);
    for (i, &id) in ids.iter().enumerate() {
        if !matcher.accept_token(id) {
            println!(
                "rejected at token {i} (id {id}, {:?}) after {:?}",
                vocab.token_text_lossy(id),
                ids[..i].iter().map(|&t| vocab.token_text_lossy(t)).collect::<String>()
            );
            return Ok(ExitCode::from(1));
        }
    }
    if matcher.can_terminate() {
        println!("accepted: {} tokens, can terminate", ids.len());
        Ok(ExitCode::SUCCESS)
    } else {
        println!("incomplete: {} tokens accepted, but the grammar cannot end here", ids.len());
        Ok(ExitCode::from(1))
    }
}

fn mask(args: &GrammarArgs, prefix: &str) -> Result<ExitCode, String> {
    let loaded = Loaded::new(args)?;
    let mut matcher = GrammarMatcher::new(&loaded.grammar);
    for id in loaded.encode(prefix)? {
        if !matcher.accept_token(id) {
            return Err(format!("the prefix is rejected at token id {id}"));
        }
    }
    let mut mask = TokenBitmask::new(loaded.grammar.vocabulary().vocab_size());
    matcher.fill_next_token_bitmask(mask.as_words_mut());
    println!("{}", mask.count_allowed());
    let ids: Vec<String> = mask.allowed_ids().map(|i| i.to_string()).collect();
    println!("{}", ids.join(" "));
    Ok(ExitCode::SUCCESS)
}
