//! `maskforge run`: constrained generation with a real model (a GGUF file, run by candle on the
//! CPU), the tokenizer read from the same file.

use std::path::PathBuf;
use std::process::ExitCode;

use maskforge_llm::{GenerateOptions, Llm, Weights};

use crate::output::{outln, Failure};
use crate::source::{GrammarArgs, Loaded};

/// The options of `maskforge run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The model: a GGUF file of a Llama-architecture model (scripts/fetch-model fetches
    /// SmolLM2-135M-Instruct into fixtures/model/).
    #[arg(long)]
    model: PathBuf,
    /// How to keep the weights: `auto` expands them to f32 when that takes at most 2 GiB
    /// (candle's f32 GEMM is several times faster than its Q4_1 kernel), `quantized` keeps the
    /// file's format (least memory), `f32` always expands.
    #[arg(long, value_enum, default_value_t = WeightsArg::Auto)]
    weights: WeightsArg,
    #[command(flatten)]
    source: GrammarArgs,
    /// The prompt.
    #[arg(long, allow_hyphen_values = true)]
    prompt: String,
    /// Wrap the prompt in the model's chat template (ChatML) as one user message.
    #[arg(long)]
    chat: bool,
    /// Stop after this many output tokens.
    #[arg(long, default_value_t = 256)]
    max_tokens: usize,
    /// Seed of the sampler.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.7)]
    temperature: f32,
    /// Repetition penalty over the last 64 output tokens (CTRL's, as transformers' and
    /// llama.cpp's `repeat_penalty`); 1 is off.
    #[arg(long, default_value_t = 1.0)]
    repeat_penalty: f32,
    /// Decode without the grammar (the same loop, for comparison); no SOURCE is needed.
    #[arg(long)]
    no_constraint: bool,
}

/// `--weights`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum WeightsArg {
    Auto,
    Quantized,
    F32,
}

pub fn run(args: &RunArgs) -> Result<ExitCode, Failure> {
    let weights = match args.weights {
        WeightsArg::Auto => Weights::Auto,
        WeightsArg::Quantized => Weights::Quantized,
        WeightsArg::F32 => Weights::Dequantized,
    };
    let mut llm = Llm::load_with(&args.model, weights).map_err(|e| e.to_string())?;
    let grammar = if args.no_constraint {
        None
    } else {
        let loaded = Loaded::with_tokenizer(&args.source, llm.vocabulary().clone(), llm.encoder().clone())?;
        Some(loaded.grammar)
    };
    let prompt =
        if args.chat { llm.chat_prompt(&args.prompt).map_err(|e| e.to_string())? } else { args.prompt.clone() };
    let options = GenerateOptions {
        max_tokens: args.max_tokens,
        seed: args.seed,
        temperature: args.temperature,
        repeat_penalty: args.repeat_penalty,
    };
    let out = llm.generate(&prompt, grammar.as_ref(), &options).map_err(|e| e.to_string())?;
    outln!("{}", out.text);
    outln!(
        "{} ({} sampled, {} jumped forward, {})",
        out.timing.summary(out.tokens.len()),
        out.sampled,
        out.jumped,
        if out.stopped { "ended with a stop token" } else { "the token limit came first" }
    );
    Ok(if out.stopped || grammar.is_none() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
