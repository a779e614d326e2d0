//! Where the time of a generation went: forward passes, masks, and the part of the mask work
//! the forward pass did not hide.

/// Per-step times of one generation. A *step* is one forward pass (the first one reads the
/// prompt) followed by sampling; in constrained decoding also the wait for the mask worker.
#[derive(Clone, Debug, Default)]
pub struct Timing {
    /// Tokens fed per forward pass (the prompt, then the sampled token and any forced ones).
    pub fed: Vec<usize>,
    /// Milliseconds of each forward pass.
    pub forward_ms: Vec<f64>,
    /// Milliseconds of each whole step.
    pub step_ms: Vec<f64>,
    /// Output tokens each step added: the sampled token and the forced ones fed after it (the
    /// first step also the tokens forced before the first sampled one).
    pub emitted: Vec<usize>,
    /// Microseconds the worker spent computing each mask (constrained decoding only).
    pub mask_us: Vec<f64>,
    /// Microseconds the main thread waited for the worker at each step: the constraint's cost
    /// the forward pass did not hide (constrained decoding only).
    pub wait_us: Vec<f64>,
    /// Milliseconds of the whole generation, the prompt included.
    pub total_ms: f64,
}

impl Timing {
    pub(crate) fn record_forward(&mut self, fed: usize, forward_ms: f64, step_ms: f64, emitted: usize) {
        self.fed.push(fed);
        self.forward_ms.push(forward_ms);
        self.step_ms.push(step_ms);
        self.emitted.push(emitted);
    }

    pub(crate) fn record_mask(&mut self, mask_us: f64, wait_us: f64) {
        self.mask_us.push(mask_us);
        self.wait_us.push(wait_us);
    }

    /// Milliseconds of the steps after the first (the prompt's): the decoding proper.
    pub fn decode_ms(&self) -> f64 {
        self.step_ms.iter().skip(1).sum()
    }

    /// Output tokens of the steps after the first (the prompt's).
    pub fn decode_tokens(&self) -> usize {
        self.emitted.iter().skip(1).sum()
    }

    /// Output tokens per second of decoding proper: the steps after the prompt's, whose cost does
    /// not depend on the prompt's length (0 when there are none).
    pub fn decode_tokens_per_s(&self) -> f64 {
        let ms = self.decode_ms();
        if ms > 0.0 {
            self.decode_tokens() as f64 / (ms / 1e3)
        } else {
            0.0
        }
    }

    /// Median forward pass after the prompt, in milliseconds.
    pub fn median_forward_ms(&self) -> f64 {
        median(self.forward_ms.iter().skip(1).copied())
    }

    /// Median mask time, in microseconds (0 without a grammar).
    pub fn median_mask_us(&self) -> f64 {
        median(self.mask_us.iter().copied())
    }

    /// The median over the decoding steps of the share of the step spent waiting for the
    /// worker, in percent (0 without a grammar).
    pub fn median_overhead_pct(&self) -> f64 {
        let shares = self.wait_us.iter().zip(&self.step_ms).skip(1).map(|(w, s)| 100.0 * w / (s * 1e3));
        median(shares)
    }

    /// The total wait for the worker over the decoding steps, in percent of their time.
    pub fn total_overhead_pct(&self) -> f64 {
        // `fold` from +0.0: an empty `sum` of floats is -0.0, which prints as "-0.00 %".
        let waited = self.wait_us.iter().skip(1).fold(0.0, |a, b| a + b);
        let decode = self.decode_ms();
        if decode > 0.0 {
            100.0 * waited / (decode * 1e3)
        } else {
            0.0
        }
    }

    /// The timing line of the command-line tool.
    pub fn summary(&self, tokens: usize) -> String {
        format!(
            "{tokens} tokens in {:.0} ms ({:.1} tokens/s, {:.1} tokens/s decoding) | forward {:.2} ms/token (median) | mask {:.1} us/token \
             (median) | overhead {:.2} % (median step), {:.2} % (all steps)",
            self.total_ms,
            tokens as f64 / (self.total_ms / 1e3),
            self.decode_tokens_per_s(),
            self.median_forward_ms(),
            self.median_mask_us(),
            self.median_overhead_pct(),
            self.total_overhead_pct(),
        )
    }
}

/// The median of some values; 0 for none.
pub fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}
