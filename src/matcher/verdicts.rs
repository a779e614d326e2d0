//! The verdicts of a fill's uncertain-token checks, kept by the exact configuration they were
//! made in.
//!
//! Inside a string, step after step, a PDA sits in the same configuration: the same threads on
//! the same (hash-consed) stack frames, only the string's own bytes consumed. The fill then
//! checks the same uncertain tokens (the ones closing the string into what follows: ` ",`,
//! ` "}`) with the parser every time, ~0.6 µs each, and ~150 of them made fills of 80–135 µs.
//! Their verdicts depend on nothing but the configuration, so a fill in a configuration met
//! before takes them from here.
//!
//! The Earley parser's configuration is its current set, each item's origin by chart position
//! (`earley::Parser::configuration`): inside a string it too is the same at every byte, and
//! grammars the PDA does not serve (objects of many optional members in any order,
//! `Snowplow---sp_341`) made 1,600 fills of 100–500 µs in MaskBench-dev, 270 with this memo.
//!
//! Frame ids and chart positions stay fixed until a byte read before them is popped: the
//! matcher forgets every verdict when it rolls back or resets (see `GrammarMatcher::rollback`),
//! and when it compacts an Earley chart, whose positions are then renumbered. Pops of bytes
//! read after the last fill (a refused token, a jump-forward probe) drop only frames and
//! positions no kept configuration names.
//!
//! Behind it, the grammar keeps verdicts by the configuration's content for all its matchers
//! (`cache/verdicts.rs`): a configuration this matcher meets first may have been met by another.

use std::sync::Arc;

/// How many configurations are kept: a string inside an object inside an array, and the few
/// configurations a step alternates between (a key, its value).
const SLOTS: usize = 8;

/// One configuration's verdicts.
#[derive(Clone, Debug)]
struct Slot {
    configuration: Box<[u32]>,
    /// The sorted positions the fill checked (the same for the same configuration; compared as a
    /// guard).
    checked: Box<[u32]>,
    /// The token ids set after the checks, of those checked (shared with the grammar's memo).
    allowed: Arc<[u32]>,
}

/// The kept verdicts of one matcher (see the module docs).
#[derive(Clone, Debug, Default)]
pub(crate) struct VerdictMemo {
    slots: Vec<Slot>,
    /// The slot the next new configuration replaces once all are used.
    next: usize,
}

impl VerdictMemo {
    /// The token ids allowed after the checks of `checked` in `configuration`, if kept.
    pub(crate) fn find(&self, configuration: &[u32], checked: &[u32]) -> Option<&[u32]> {
        self.slots.iter().find(|s| *s.configuration == *configuration && *s.checked == *checked).map(|s| &s.allowed[..])
    }

    /// Keeps `allowed`, the ids set after the checks of `checked` in `configuration`.
    pub(crate) fn keep(&mut self, configuration: &[u32], checked: &[u32], allowed: Arc<[u32]>) {
        let slot = Slot { configuration: configuration.into(), checked: checked.into(), allowed };
        if self.slots.len() < SLOTS {
            self.slots.push(slot);
        } else {
            self.slots[self.next] = slot;
            self.next = (self.next + 1) % SLOTS;
        }
    }

    /// Forgets every verdict (the frame ids they name may be reused).
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.next = 0;
    }
}
