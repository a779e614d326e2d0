//! Chart compaction: a parser that will never be rolled back past its last `keep` bytes drops
//! the rest of its chart, except what a later step can still read.
//!
//! A later step reads an older position `p` in one way only: completing a rule predicted at `p`
//! advances the items waiting at `p` ([`super::Chart::complete`]). The *items* of older sets are
//! read only by rolling back into them. So the positions to keep are those some item may still
//! complete to: the origins of the items and waiting parents of the kept window, and, closing
//! over it, the origins of the parents waiting at those positions. Position 0 is always kept:
//! origin 0 marks the start rule's own items (acceptance). Kept older positions keep their
//! waiting lists and become empty item sets; positions are renumbered in order, so origins
//! shift and [`Parser::byte_len`] shrinks, while what the parser accepts, its masks and its
//! acceptance are unchanged.
//!
//! For a flat JSON array the kept positions are a handful whatever its length, so memory stays
//! flat in the input; for input that nests, it is the nesting depth, which the parse needs.

use super::{Chart, Item, Parser, Waiting};

impl Parser {
    /// Drops every position older than the newest `keep` bytes that no later step can read
    /// (see the module documentation). Afterwards at most `keep` bytes can be popped. Returns
    /// how many positions were dropped.
    pub fn compact(&mut self, keep: usize) -> usize {
        let len = self.byte_len();
        if keep >= len {
            return 0;
        }
        let window = len - keep;
        let live = self.chart.live_positions(window);
        let map = renumbering(&live);
        let dropped = window - map.kept;
        self.chart.rebuild(window, &map.new_position, dropped);
        // The kept older positions are empty sets: nothing may be popped into them.
        self.chart.floor = self.byte_len() - keep;
        dropped
    }
}

/// Old positions before the window → new positions.
struct Renumbering {
    /// `new_position[p]` for a kept `p`, else `u32::MAX`.
    new_position: Vec<u32>,
    kept: usize,
}

fn renumbering(live: &[bool]) -> Renumbering {
    let mut new_position = vec![u32::MAX; live.len()];
    let mut kept = 0;
    for (p, _) in live.iter().enumerate().filter(|(_, &l)| l) {
        new_position[p] = kept as u32;
        kept += 1;
    }
    Renumbering { new_position, kept }
}

impl Chart {
    /// Which positions before `window` a later step can read (see the module documentation).
    fn live_positions(&self, window: usize) -> Vec<bool> {
        let mut live = vec![false; window];
        let mut stack = Vec::new();
        let mark = |p: u32, live: &mut Vec<bool>, stack: &mut Vec<u32>| {
            if (p as usize) < window && !live[p as usize] {
                live[p as usize] = true;
                stack.push(p);
            }
        };
        mark(0, &mut live, &mut stack);
        for it in &self.items[self.set_starts[window] as usize..] {
            mark(it.origin, &mut live, &mut stack);
        }
        for w in &self.waiting[self.waiting_starts[window] as usize..] {
            mark(w.parent.origin, &mut live, &mut stack);
        }
        while let Some(p) = stack.pop() {
            let (ws, we) = (self.waiting_starts[p as usize] as usize, self.waiting_starts[p as usize + 1] as usize);
            for i in ws..we {
                mark(self.waiting[i].parent.origin, &mut live, &mut stack);
            }
        }
        live
    }

    /// Keeps the kept older positions (waiting lists only) and the window (whole), with
    /// origins renumbered: old position `p < window` → `new_position[p]`, a window position
    /// `p` → `p - dropped`.
    fn rebuild(&mut self, window: usize, new_position: &[u32], dropped: usize) {
        let remap = |it: Item| Item {
            origin: match new_position.get(it.origin as usize) {
                Some(&n) => n,
                None => it.origin - dropped as u32,
            },
            ..it
        };
        let (mut items, mut set_starts, mut waiting, mut waiting_starts, mut accepting) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let kept_old = (0..window).filter(|&p| new_position[p] != u32::MAX);
        for p in kept_old.chain(window..self.set_starts.len()) {
            let (is, ie) = bounds(&self.set_starts, self.items.len(), p);
            let (ws, we) = bounds(&self.waiting_starts, self.waiting.len(), p);
            set_starts.push(items.len() as u32);
            if p >= window {
                items.extend(self.items[is..ie].iter().map(|&it| remap(it)));
            }
            waiting_starts.push(waiting.len() as u32);
            waiting.extend(self.waiting[ws..we].iter().map(|w| Waiting { rule: w.rule, parent: remap(w.parent) }));
            accepting.push(self.accepting[p]);
        }
        (self.items, self.set_starts, self.waiting, self.waiting_starts, self.accepting) =
            (items, set_starts, waiting, waiting_starts, accepting);
    }
}

/// The range of position `p` in a flat vector with row starts `starts` and length `len`.
fn bounds(starts: &[u32], len: usize, p: usize) -> (usize, usize) {
    (starts[p] as usize, starts.get(p + 1).map_or(len, |&e| e as usize))
}
