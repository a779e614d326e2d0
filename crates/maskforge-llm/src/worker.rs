//! The mask worker: a thread that owns the grammar matcher and computes the mask of step t+1
//! while the main thread runs the model's forward pass for step t.
//!
//! Per step the main thread sends the sampled token. The worker accepts it, finds the text the
//! grammar forces next (jump-forward), accepts its tokens and replies with them at once — the
//! main thread feeds them to the model in the same forward pass as the sampled token — and only
//! then computes the mask for the position after them, which the main thread picks up after the
//! forward pass. What the main thread waits for is the constraint's cost not hidden by the model.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::Instant;

use maskforge::{GrammarMatcher, TextEncoder, TokenBitmask};

use crate::LlmError;

/// What the worker sends back.
enum Reply {
    /// The tokens the grammar forces after the accepted token (possibly none), and whether the
    /// matcher has terminated (a stop token was accepted: no mask follows).
    Forced { ids: Vec<u32>, terminated: bool },
    /// The mask for the position after the forced tokens, and how long computing it took.
    Mask { mask: TokenBitmask, micros: f64 },
    /// The matcher rejected a token: the loop must stop.
    Failed(LlmError),
}

/// The main thread's handle on the worker.
pub(crate) struct MaskWorker<'scope> {
    requests: Option<Sender<u32>>,
    replies: Receiver<Reply>,
    handle: Option<ScopedJoinHandle<'scope, ()>>,
}

/// The forced tokens after a step.
pub(crate) struct Forced {
    pub(crate) ids: Vec<u32>,
    pub(crate) terminated: bool,
}

impl<'scope> MaskWorker<'scope> {
    /// Starts the worker on `matcher` (which has accepted nothing yet): it computes the forced
    /// tokens and the mask of the first position right away.
    pub(crate) fn spawn<'env>(
        scope: &'scope Scope<'scope, 'env>,
        matcher: GrammarMatcher,
        encoder: TextEncoder,
    ) -> MaskWorker<'scope> {
        let (requests, inbox) = channel::<u32>();
        let (outbox, replies) = channel();
        let handle = scope.spawn(move || run(matcher, encoder, inbox, outbox));
        MaskWorker { requests: Some(requests), replies, handle: Some(handle) }
    }

    /// Sends the token sampled at this step.
    pub(crate) fn accept(&self, id: u32) -> Result<(), LlmError> {
        let requests = self.requests.as_ref().expect("sender lives until drop");
        requests.send(id).map_err(|_| self.stopped())
    }

    /// Waits for the forced tokens of the current step.
    pub(crate) fn forced(&mut self) -> Result<Forced, LlmError> {
        match self.replies.recv() {
            Ok(Reply::Forced { ids, terminated }) => Ok(Forced { ids, terminated }),
            Ok(Reply::Failed(e)) => Err(e),
            Ok(Reply::Mask { .. }) => Err(LlmError::Worker("a mask came before the forced tokens".into())),
            Err(_) => Err(self.stopped()),
        }
    }

    /// Waits for the mask of the next position and the microseconds the worker spent on it.
    pub(crate) fn mask(&mut self) -> Result<(TokenBitmask, f64), LlmError> {
        match self.replies.recv() {
            Ok(Reply::Mask { mask, micros }) => Ok((mask, micros)),
            Ok(Reply::Failed(e)) => Err(e),
            Ok(Reply::Forced { .. }) => Err(LlmError::Worker("forced tokens came instead of a mask".into())),
            Err(_) => Err(self.stopped()),
        }
    }

    fn stopped(&self) -> LlmError {
        LlmError::Worker("it exited early (a panic in the matcher?)".into())
    }
}

impl Drop for MaskWorker<'_> {
    fn drop(&mut self) {
        // Closing the request channel ends the worker's loop; joining propagates nothing (a
        // panic in the worker already surfaced as a closed reply channel).
        self.requests = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

fn run(mut matcher: GrammarMatcher, encoder: TextEncoder, inbox: Receiver<u32>, outbox: Sender<Reply>) {
    // The first position: nothing to accept.
    if !step(&mut matcher, &encoder, None, &outbox) {
        return;
    }
    for id in inbox {
        if !step(&mut matcher, &encoder, Some(id), &outbox) {
            return;
        }
    }
}

/// One step of the worker; false when the loop must end (a failure, or the main thread left).
fn step(matcher: &mut GrammarMatcher, encoder: &TextEncoder, sampled: Option<u32>, outbox: &Sender<Reply>) -> bool {
    let forced = match accept_and_jump(matcher, encoder, sampled) {
        Ok(forced) => forced,
        Err(e) => {
            let _ = outbox.send(Reply::Failed(e));
            return false;
        }
    };
    let terminated = matcher.is_terminated();
    if outbox.send(Reply::Forced { ids: forced, terminated }).is_err() || terminated {
        return false;
    }
    let start = Instant::now();
    let mut mask = TokenBitmask::new(matcher.grammar().vocabulary().vocab_size());
    matcher.fill_next_token_bitmask(mask.as_words_mut());
    let micros = start.elapsed().as_secs_f64() * 1e6;
    outbox.send(Reply::Mask { mask, micros }).is_ok()
}

/// Accepts the sampled token, then the tokens of the text the grammar forces after it.
fn accept_and_jump(
    matcher: &mut GrammarMatcher,
    encoder: &TextEncoder,
    sampled: Option<u32>,
) -> Result<Vec<u32>, LlmError> {
    let vocab = matcher.grammar().vocabulary().clone();
    let rejected =
        |id: u32, accepted: usize| LlmError::Rejected { id, text: vocab.token_text_lossy(id).into_owned(), accepted };
    if let Some(id) = sampled {
        if !matcher.accept_token(id) {
            return Err(rejected(id, matcher.num_accepted_tokens()));
        }
        if matcher.is_terminated() {
            return Ok(Vec::new());
        }
    }
    let text = matcher.find_jump_forward_string();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let ids = encoder.encode_for_matching(&text)?;
    for &id in &ids {
        if !matcher.accept_token(id) {
            return Err(rejected(id, matcher.num_accepted_tokens()));
        }
    }
    Ok(ids)
}
