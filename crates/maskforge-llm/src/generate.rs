//! The decoding loop: forward pass, mask, sample, accept — with the mask of the next step
//! computed beside the forward pass and forced text fed without sampling.

use std::time::Instant;

use maskforge::{CompiledGrammar, GrammarMatcher, TextEncoder, Vocabulary};

use crate::model::Model;
use crate::sample::Sampler;
use crate::timing::Timing;
use crate::worker::MaskWorker;
use crate::LlmError;

/// How to generate.
#[derive(Clone, Debug)]
pub struct GenerateOptions {
    /// Stop after this many output tokens (sampled and forced).
    pub max_tokens: usize,
    /// Seed of the sampler.
    pub seed: u64,
    /// Sampling temperature; 0 is greedy.
    pub temperature: f32,
    /// The repetition penalty of CTRL (Keskar et al. 2019), as transformers' and llama.cpp's
    /// `repeat_penalty`: the logit of a token among the last [`REPEAT_WINDOW`] output tokens is
    /// divided by it when positive, multiplied when negative, before the mask and sampling. 1
    /// (the default) is off. A small model decoding greedily tends to repeat a phrase until the
    /// token limit (`"john_john_john_…"`); a grammar cannot end a string for it, this can.
    pub repeat_penalty: f32,
}

/// How many of the latest output tokens [`GenerateOptions::repeat_penalty`] looks at (llama.cpp's
/// default `repeat_last_n`).
pub const REPEAT_WINDOW: usize = 64;

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions { max_tokens: 256, seed: 0, temperature: 0.7, repeat_penalty: 1.0 }
    }
}

/// The result of one generation.
#[derive(Clone, Debug)]
pub struct Generation {
    /// The output text (special tokens spelled by their names), without the final stop token.
    pub text: String,
    /// The output token ids, the final stop token included if there is one.
    pub tokens: Vec<u32>,
    /// Whether generation ended on a stop token (else on the token limit).
    pub stopped: bool,
    /// How many tokens were sampled from the model.
    pub sampled: usize,
    /// How many tokens were forced by the grammar and fed without sampling (jump-forward).
    pub jumped: usize,
    /// Where the time went.
    pub timing: Timing,
}

/// Runs one generation from the prompt's ids; `grammar` is `None` for unconstrained decoding.
pub(crate) fn generate(
    model: &mut Model,
    encoder: &TextEncoder,
    prompt: &[u32],
    grammar: Option<&CompiledGrammar>,
    options: &GenerateOptions,
) -> Result<Generation, LlmError> {
    model.reset();
    let mut sampler = Sampler::new(options.seed, options.temperature).with_repeat_penalty(options.repeat_penalty);
    let vocab = encoder.vocabulary().clone();
    let mut out =
        Output { vocab, tokens: Vec::new(), sampled: 0, jumped: 0, stopped: false, timing: Timing::default() };
    match grammar {
        None => unconstrained(model, prompt, &mut sampler, options, &mut out)?,
        Some(grammar) => {
            std::thread::scope(|scope| {
                let worker = MaskWorker::spawn(scope, GrammarMatcher::new(grammar), encoder.clone());
                constrained(model, prompt, &mut sampler, options, worker, &mut out)
            })?;
        }
    }
    Ok(out.finish())
}

/// The output so far.
struct Output {
    vocab: Vocabulary,
    tokens: Vec<u32>,
    sampled: usize,
    jumped: usize,
    stopped: bool,
    timing: Timing,
}

impl Output {
    fn full(&self, options: &GenerateOptions) -> bool {
        self.tokens.len() >= options.max_tokens
    }

    fn finish(self) -> Generation {
        let shown = if self.stopped { &self.tokens[..self.tokens.len() - 1] } else { &self.tokens[..] };
        let bytes: Vec<u8> = shown
            .iter()
            .flat_map(|&id| {
                if self.vocab.is_special(id) {
                    self.vocab.token_text_lossy(id).into_owned().into_bytes()
                } else {
                    self.vocab.token_bytes(id).to_vec()
                }
            })
            .collect();
        Generation {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            tokens: self.tokens,
            stopped: self.stopped,
            sampled: self.sampled,
            jumped: self.jumped,
            timing: self.timing,
        }
    }
}

fn unconstrained(
    model: &mut Model,
    prompt: &[u32],
    sampler: &mut Sampler,
    options: &GenerateOptions,
    out: &mut Output,
) -> Result<(), LlmError> {
    let mut input = prompt.to_vec();
    let started = Instant::now();
    while !out.full(options) {
        let step = Instant::now();
        let logits = model.forward(&input)?;
        let forward_ms = step.elapsed().as_secs_f64() * 1e3;
        let id =
            sampler.sample_after(&logits, None, recent(&out.tokens)).ok_or(LlmError::EmptyMask(out.tokens.len()))?;
        out.timing.record_forward(input.len(), forward_ms, step.elapsed().as_secs_f64() * 1e3, 1);
        out.tokens.push(id);
        out.sampled += 1;
        if out.vocab.is_stop_token(id) {
            out.stopped = true;
            break;
        }
        input = vec![id];
    }
    out.timing.total_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(())
}

fn constrained(
    model: &mut Model,
    prompt: &[u32],
    sampler: &mut Sampler,
    options: &GenerateOptions,
    mut worker: MaskWorker<'_>,
    out: &mut Output,
) -> Result<(), LlmError> {
    let started = Instant::now();
    // The text the grammar forces before the first sampled token rides with the prompt.
    let wait = Instant::now();
    let forced = worker.forced()?;
    let mut waited_us = wait.elapsed().as_secs_f64() * 1e6;
    let mut input = prompt.to_vec();
    out.push_forced(&forced.ids, &mut input);
    // Output tokens before this step's sampled one (the forced ones before the first step count
    // as the first step's).
    let mut emitted_before = 0;
    while !out.full(options) {
        let step = Instant::now();
        let logits = model.forward(&input)?;
        let forward_ms = step.elapsed().as_secs_f64() * 1e3;
        let wait = Instant::now();
        let (mask, mask_us) = worker.mask()?;
        waited_us += wait.elapsed().as_secs_f64() * 1e6;
        let id = sampler
            .sample_after(&logits, Some(&mask), recent(&out.tokens))
            .ok_or(LlmError::EmptyMask(out.tokens.len()))?;
        out.tokens.push(id);
        out.sampled += 1;
        worker.accept(id)?;
        let wait = Instant::now();
        let forced = worker.forced()?;
        waited_us += wait.elapsed().as_secs_f64() * 1e6;
        let step_ms = step.elapsed().as_secs_f64() * 1e3;
        let fed = input.len();
        if !forced.terminated {
            input = vec![id];
            out.push_forced(&forced.ids, &mut input);
        }
        out.timing.record_forward(fed, forward_ms, step_ms, out.tokens.len() - emitted_before);
        out.timing.record_mask(mask_us, waited_us);
        emitted_before = out.tokens.len();
        waited_us = 0.0;
        if forced.terminated {
            out.stopped = true;
            break;
        }
    }
    out.timing.total_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(())
}

/// The output tokens the repetition penalty looks at.
fn recent(tokens: &[u32]) -> &[u32] {
    &tokens[tokens.len().saturating_sub(REPEAT_WINDOW)..]
}

impl Output {
    /// Appends forced tokens to the output and to the next forward pass's input.
    fn push_forced(&mut self, ids: &[u32], input: &mut Vec<u32>) {
        self.tokens.extend_from_slice(ids);
        input.extend_from_slice(ids);
        self.jumped += ids.len();
    }
}
