//! Layer 4: the frozen rule automata run as a pushdown automaton (XGrammar §3.3), beside the
//! Earley parser, for grammars that need no more (see [`check_servable`]).
//!
//! A *thread* is (current state, stack), the stack being the return states of the rules it is
//! inside, innermost first. The threads alive after a byte are all the ways the grammar can be
//! read so far; a deterministic grammar keeps a handful (one per rule a value may start, until
//! its first byte decides). Per byte:
//!
//! * **scan**: a thread whose state has a byte edge covering the byte moves along it (the stack
//!   is shared, not copied);
//! * **push**: a thread at a state with a rule edge to `B` (return state `t`) adds the thread
//!   (start of `B`, stack + `t`);
//! * **pop**: a thread at a final state of its rule continues at the top return state with the
//!   rest of the stack; with an empty stack (the root rule) the position is accepting.
//!
//! Push and pop run to a fixpoint after every scan (the *closure*); only threads that can read a
//! byte are kept. The closure terminates because pushes without reading a byte follow the
//! grammar's left-call graph, which [`check_servable`] requires to be acyclic, and threads are
//! deduplicated.
//!
//! # The persistent stack
//!
//! Stacks are nodes of one tree (`Frame`: a return state and the parent frame), hash-consed:
//! the same (return state, parent) is always the same frame, so parallel threads share their
//! common stack bottom, two threads with equal stacks have the same frame id, and a stack that
//! recurs (every element of a flat array pushes the same frame) costs nothing new. A byte adds
//! only the frames its pushes create; rolling back `n` bytes truncates the threads and the
//! frames to what they were (frames are numbered in creation order), so neither a step nor a
//! rollback copies a stack.
//!
//! # Parallel threads are bounded
//!
//! Ambiguity can make the threads of a position grow with the input (the same bytes read as
//! several nestings). Past [`MAX_THREADS`] threads at a position the byte is refused and
//! [`Pda::overflowed`] is set: the caller then replays [`Pda::bytes`] into an Earley parser,
//! which serves every grammar in time polynomial in the input. The PDA never answers wrong;
//! it only hands over.
//!
//! # Bounded work and memory
//!
//! As the Earley parser, the PDA carries a `StepBudget` (`util::budget`, unlimited unless set) that counts
//! every thread a byte scans and every thread its closure visits, and checks
//! [`Pda::state_bytes`] every 1,024 visits; a byte that goes over it is refused with the state
//! unchanged and `Pda::budget` exceeded (not [`Pda::overflowed`]). The matcher hands the
//! same budget to the Earley parser that replaces an overflowed PDA, so a hand-over's replay
//! counts against the step that triggers it.

mod eligible;

use std::sync::Arc;

pub use eligible::{check_servable, PdaError};

use crate::fsm::{GrammarFsm, StateId};
use crate::util::budget::StepBudget;
use crate::util::hash::FastMap;
use crate::util::small_set::SmallSet;

/// Threads one position may hold before the PDA hands over to the Earley parser. A grammar the
/// PDA serves well keeps a few; hundreds mean ambiguity the Earley chart handles better.
pub const MAX_THREADS: usize = 256;

/// The id of the empty stack.
const EMPTY: u32 = u32::MAX;

/// In a configuration by content ([`Pda::configuration_content`]): the end of a thread's stack.
pub const STACK_END: u32 = u32::MAX;
/// In a configuration cut to what was read ([`Pda::popped_content`]): frames remain below.
pub const STACK_CUT: u32 = u32::MAX - 1;

/// A hash of the threads' states of a configuration by content, full or cut (the words after
/// each stack's end): the group a cut list is kept in, and looked up by.
pub fn content_states_hash(configuration: &[u32]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = rustc_hash::FxHasher::default();
    let mut at_state = true;
    for &w in configuration {
        if at_state {
            w.hash(&mut hasher);
        }
        at_state = w == STACK_END || w == STACK_CUT;
    }
    hasher.finish()
}

/// Whether the configuration by content `full` ([`Pda::configuration_content`]) matches `cut`
/// ([`Pda::popped_content`] of a configuration, maybe of another PDA): the same states in
/// the same order, each stack starting with the frames `cut` kept, and ending where `cut`
/// ends it. Then every byte string that the configuration of `cut` read after recording
/// pops (it popped no frame below a cut) is read alike from `full`.
pub fn matches_cut_content(cut: &[u32], full: &[u32]) -> bool {
    let (mut c, mut f) = (0, 0);
    while c < cut.len() {
        match cut[c] {
            STACK_CUT => {
                // `full` must have frames left here too: skip them.
                if full.get(f).is_none_or(|&w| w == STACK_END) {
                    return false;
                }
                while full.get(f).is_some_and(|&w| w != STACK_END) {
                    f += 1;
                }
            }
            w if full.get(f) != Some(&w) => return false,
            _ => {}
        }
        c += 1;
        f += 1;
    }
    f == full.len()
}

/// A stack element: the state to return to when the rule above it ends, and the frame below.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Frame {
    ret: StateId,
    parent: u32,
}

/// One way of reading the input: the current state and the id of its stack's top frame.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Thread {
    state: StateId,
    stack: u32,
}

/// A pushdown automaton over a [`GrammarFsm`], one position per consumed byte.
#[derive(Clone, Debug)]
pub struct Pda {
    fsm: Arc<GrammarFsm>,
    /// The frame tree, in creation order.
    frames: Vec<Frame>,
    /// Per frame, how many frames its stack holds (itself included): a frame's content does
    /// not change with the frames above it, and neither does its height.
    heights: Vec<u32>,
    /// Hash-consing of `frames`.
    frame_ids: FastMap<Frame, u32>,
    /// The scannable threads of every position, in one vector with row starts.
    threads: Vec<Thread>,
    thread_starts: Vec<u32>,
    /// `frames.len()` after each position: what a rollback truncates to.
    frame_lens: Vec<u32>,
    accepting: Vec<bool>,
    /// Every byte consumed since the start (kept through [`Pda::compact`], for a hand-over).
    bytes: Vec<u8>,
    /// Whether the last byte was refused for too many threads.
    overflowed: bool,
    /// The work the current call may still do (see the module documentation).
    budget: StepBudget,
    /// The lowest height of a frame popped since [`Pda::record_pops`] (`u32::MAX`: none).
    lowest_popped: u32,
    // Scratch of the closure.
    seen: SmallSet<Thread>,
    work: Vec<Thread>,
}

impl Pda {
    /// A PDA at the start of the root rule. The grammar must pass [`check_servable`] (the
    /// closure may not terminate on left recursion).
    pub fn new(fsm: Arc<GrammarFsm>) -> Self {
        let start = fsm.rule(fsm.root()).start;
        let mut pda = Pda {
            fsm,
            frames: Vec::new(),
            heights: Vec::new(),
            frame_ids: FastMap::default(),
            threads: Vec::new(),
            thread_starts: Vec::new(),
            frame_lens: Vec::new(),
            accepting: Vec::new(),
            bytes: Vec::new(),
            overflowed: false,
            budget: StepBudget::UNLIMITED,
            lowest_popped: u32::MAX,
            seen: SmallSet::default(),
            work: vec![Thread { state: start, stack: EMPTY }],
        };
        pda.open_position();
        // The first position of a servable grammar is small; should it overflow all the same,
        // it keeps what it found (a caller checks `overflowed` and hands over to Earley).
        if !pda.close_position() {
            pda.overflowed = true;
        }
        pda.frame_lens.push(pda.frames.len() as u32);
        pda
    }

    /// The automata this PDA runs on.
    pub fn fsm(&self) -> &Arc<GrammarFsm> {
        &self.fsm
    }

    /// The number of positions kept, minus one: the bytes that can be popped (all consumed
    /// bytes until [`Pda::compact`]).
    #[inline]
    pub fn byte_len(&self) -> usize {
        self.thread_starts.len() - 1
    }

    /// Every byte consumed since the start, including those [`Pda::compact`] dropped.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether the last byte was refused because the threads exceeded [`MAX_THREADS`] (not
    /// because the grammar rejects it). The state is that before the byte.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Replaces the budget (see the module documentation).
    pub(crate) fn set_budget(&mut self, budget: StepBudget) {
        self.budget = budget;
    }

    /// The budget: its limits, the visits counted since it was set, and whether a byte was
    /// refused for going over one.
    pub(crate) fn budget(&self) -> StepBudget {
        self.budget
    }

    /// The bytes the PDA holds, counted by length: threads and per-position rows, the frames
    /// with their hash-consing table (estimated at one key and id per frame), and the consumed
    /// bytes kept for a hand-over. What a per-matcher memory bound compares.
    pub fn state_bytes(&self) -> usize {
        use std::mem::size_of;
        self.threads.len() * size_of::<Thread>()
            + (self.thread_starts.len() + self.frame_lens.len()) * size_of::<u32>()
            + self.accepting.len()
            + self.bytes.len()
            + self.frames.len() * (2 * size_of::<Frame>() + 2 * size_of::<u32>())
    }

    /// Whether the input so far is a complete match of the root rule.
    #[inline]
    pub fn is_accepting(&self) -> bool {
        *self.accepting.last().expect("a PDA always has a position")
    }

    /// The states of the current threads that can read a byte (with repeats when threads
    /// differ only in their stacks).
    pub fn current_states(&self) -> impl Iterator<Item = StateId> + '_ {
        self.current_threads().iter().map(|t| t.state)
    }

    /// Writes the current position's threads into `out` as (state, stack frame) pairs. Frames
    /// are hash-consed and keep their ids until a byte before their creation is popped, so
    /// until then two equal lists are the same configuration: the same bytes are read from
    /// both alike.
    pub fn configuration(&self, out: &mut Vec<u32>) {
        out.clear();
        for t in self.current_threads() {
            out.extend([t.state.index() as u32, t.stack]);
        }
    }

    /// Writes the current position's threads into `out` by content: per thread its state, the
    /// return states of its stack from the top down, and [`STACK_END`]. Unlike
    /// [`Pda::configuration`] the list means the same in every PDA of the grammar and after any
    /// rollback: two PDAs with equal lists read every byte string alike. Returns `false` (and
    /// `out` is partial) once the list would exceed `max_len` words (deep stacks).
    pub fn configuration_content(&self, out: &mut Vec<u32>, max_len: usize) -> bool {
        self.write_content(out, 0, max_len)
    }

    /// Starts recording which frames the next bytes pop (see [`Pda::popped_content`]).
    pub fn record_pops(&mut self) {
        self.lowest_popped = u32::MAX;
    }

    /// Like [`Pda::configuration_content`], but each stack cut below the frames that the bytes
    /// read since [`Pda::record_pops`] could have popped, ending in [`STACK_CUT`] where frames
    /// remain below the cut. Call it at the position `record_pops` was called at.
    ///
    /// A thread's stack, while bytes are read, is frames it pushed on top of what is left of
    /// its first stack; a pushed frame stands higher than the frame it was pushed on, so the
    /// lowest height popped (whatever the frame, pushed or not) is at or below every frame of
    /// a first stack that was read. Cutting every stack below that height keeps every frame
    /// read (and maybe a few that were not): a configuration matching the cut list
    /// ([`matches_cut_content`]) reads those bytes alike, whatever lies below its cuts.
    pub fn popped_content(&self, out: &mut Vec<u32>, max_len: usize) -> bool {
        self.write_content(out, self.lowest_popped, max_len)
    }

    /// Writes the threads by content, each stack cut below the frames of height `lowest` or
    /// more (none cut when `lowest` is 0).
    fn write_content(&self, out: &mut Vec<u32>, lowest: u32, max_len: usize) -> bool {
        out.clear();
        for t in self.current_threads() {
            out.push(t.state.index() as u32);
            let mut frame = t.stack;
            while frame != EMPTY && self.heights[frame as usize] >= lowest {
                if out.len() >= max_len {
                    return false;
                }
                let f = self.frames[frame as usize];
                out.push(f.ret.index() as u32);
                frame = f.parent;
            }
            out.push(if frame == EMPTY { STACK_END } else { STACK_CUT });
        }
        out.len() <= max_len
    }

    /// How many threads the current position holds.
    pub fn thread_count(&self) -> usize {
        self.current_threads().len()
    }

    fn current_threads(&self) -> &[Thread] {
        &self.threads[*self.thread_starts.last().unwrap() as usize..]
    }

    /// Consumes one byte. Returns `false`, leaving the state unchanged, when no thread can read
    /// it, when the threads would exceed [`MAX_THREADS`] ([`Pda::overflowed`]) or when the
    /// budget runs out (`Pda::budget`).
    pub fn advance_byte(&mut self, b: u8) -> bool {
        self.overflowed = false;
        self.work.clear();
        let cur = *self.thread_starts.last().unwrap() as usize;
        if !self.budget.charge((self.threads.len() - cur) as u64) {
            return false;
        }
        for i in cur..self.threads.len() {
            let t = self.threads[i];
            for e in self.fsm.byte_edges(t.state) {
                if e.lo <= b && b <= e.hi {
                    self.work.push(Thread { state: e.target, stack: t.stack });
                } else if e.lo > b {
                    break;
                }
            }
        }
        if self.work.is_empty() {
            return false;
        }
        let frames_before = self.frames.len();
        self.open_position();
        if !self.close_position() {
            self.discard_position(frames_before);
            self.overflowed = !self.budget.exceeded();
            return false;
        }
        self.frame_lens.push(self.frames.len() as u32);
        self.bytes.push(b);
        if self.budget.bytes_due() && !self.budget.check_bytes(self.state_bytes()) {
            self.frame_lens.pop();
            self.bytes.pop();
            self.discard_position(frames_before);
            return false;
        }
        true
    }

    /// Drops the open position and the frames created since `frames_before`.
    fn discard_position(&mut self, frames_before: usize) {
        let start = self.thread_starts.pop().unwrap() as usize;
        self.threads.truncate(start);
        self.accepting.pop();
        self.truncate_frames(frames_before);
    }

    /// Consumes bytes until one is refused; returns how many were consumed.
    pub fn advance_bytes(&mut self, bytes: &[u8]) -> usize {
        bytes.iter().position(|&b| !self.advance_byte(b)).unwrap_or(bytes.len())
    }

    /// Undoes the last `n` consumed bytes.
    ///
    /// # Panics
    /// When `n` exceeds [`Pda::byte_len`].
    pub fn pop_bytes(&mut self, n: usize) {
        assert!(n <= self.byte_len(), "cannot pop {n} bytes from a PDA holding {}", self.byte_len());
        if n == 0 {
            return;
        }
        let keep = self.thread_starts.len() - n;
        self.threads.truncate(self.thread_starts[keep] as usize);
        self.thread_starts.truncate(keep);
        self.accepting.truncate(keep);
        self.frame_lens.truncate(keep);
        self.truncate_frames(*self.frame_lens.last().unwrap() as usize);
        self.bytes.truncate(self.bytes.len() - n);
        self.overflowed = false;
    }

    /// The set of bytes some thread can read, as a 256-bit set.
    pub fn next_bytes(&self) -> [u64; 4] {
        self.fsm.next_bytes(self.current_states())
    }

    /// Forgets the positions older than the newest `keep` bytes: afterwards at most `keep`
    /// bytes can be popped. Frames stay (they are shared by the stacks of every position, and
    /// hash-consing keeps them as few as the distinct stacks seen); the consumed bytes stay for
    /// a hand-over to Earley. Returns how many positions were dropped.
    pub fn compact(&mut self, keep: usize) -> usize {
        let len = self.byte_len();
        if keep >= len {
            return 0;
        }
        let drop = len - keep;
        let first = self.thread_starts[drop];
        self.threads.drain(..first as usize);
        self.thread_starts.drain(..drop);
        for s in &mut self.thread_starts {
            *s -= first;
        }
        self.accepting.drain(..drop);
        self.frame_lens.drain(..drop);
        drop
    }

    fn open_position(&mut self) {
        self.thread_starts.push(self.threads.len() as u32);
        self.accepting.push(false);
    }

    /// Runs push and pop to a fixpoint from the threads in `work`, keeping the scannable ones
    /// in the open position. Returns `false` when they exceed [`MAX_THREADS`] or the work
    /// budget runs out.
    fn close_position(&mut self) -> bool {
        let Pda {
            fsm,
            frames,
            heights,
            frame_ids,
            threads,
            thread_starts,
            accepting,
            seen,
            work,
            budget,
            lowest_popped,
            ..
        } = self;
        seen.clear();
        let start = *thread_starts.last().unwrap() as usize;
        while let Some(t) = work.pop() {
            if !budget.charge(1) {
                return false;
            }
            if !seen.insert(t) {
                continue;
            }
            if !fsm.byte_edges(t.state).is_empty() {
                if threads.len() - start == MAX_THREADS {
                    return false;
                }
                threads.push(t);
            }
            if fsm.is_final(t.state) {
                if t.stack == EMPTY {
                    // Only the root's threads have an empty stack.
                    *accepting.last_mut().unwrap() = true;
                } else {
                    let f = frames[t.stack as usize];
                    *lowest_popped = (*lowest_popped).min(heights[t.stack as usize]);
                    work.push(Thread { state: f.ret, stack: f.parent });
                }
            }
            for e in fsm.rule_edges(t.state) {
                let stack = intern(frames, heights, frame_ids, Frame { ret: e.target, parent: t.stack });
                work.push(Thread { state: fsm.rule(e.rule).start, stack });
            }
        }
        true
    }

    /// Drops the frames created after the first `len`.
    fn truncate_frames(&mut self, len: usize) {
        for f in &self.frames[len..] {
            self.frame_ids.remove(f);
        }
        self.frames.truncate(len);
        self.heights.truncate(len);
    }
}

/// The id of frame `f`, created if new (hash-consing).
fn intern(frames: &mut Vec<Frame>, heights: &mut Vec<u32>, ids: &mut FastMap<Frame, u32>, f: Frame) -> u32 {
    let next = frames.len() as u32;
    let id = *ids.entry(f).or_insert(next);
    if id == next {
        frames.push(f);
        heights.push(if f.parent == EMPTY { 1 } else { heights[f.parent as usize] + 1 });
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::budget::Stop;

    fn pda(ebnf: &str) -> Pda {
        let g = crate::parse_ebnf(ebnf, "root").unwrap();
        let fsm = GrammarFsm::new(&g).unwrap();
        check_servable(&fsm).unwrap();
        Pda::new(Arc::new(fsm))
    }

    #[test]
    fn reads_nesting_rolls_back_and_accepts() {
        let mut p = pda(r#"root ::= "a" root "b" | "" "#);
        assert!(p.is_accepting());
        assert!(p.advance_bytes(b"aab") == 3 && !p.is_accepting());
        assert!(p.advance_byte(b'b') && p.is_accepting());
        assert!(!p.advance_byte(b'b') && !p.overflowed());
        p.pop_bytes(2);
        assert_eq!((p.byte_len(), p.bytes()), (2, &b"aa"[..]));
        assert!(!p.is_accepting() && p.advance_bytes(b"bb") == 2 && p.is_accepting());
    }

    #[test]
    fn recurring_stacks_share_frames_and_rollback_drops_new_ones() {
        let mut p = pda(r#"root ::= "[" (item ("," item)*)? "]"
            item ::= "x" | "[" "y" "]""#);
        p.advance_bytes(b"[x,x,x");
        let frames = p.frames.len();
        assert!(p.advance_bytes(b",x,x") == 4 && p.frames.len() == frames, "a flat list reuses its frames");
        p.pop_bytes(10);
        assert_eq!((p.byte_len(), p.frames.len()), (0, *p.frame_lens.first().unwrap() as usize));
        assert!(p.advance_bytes(b"[x,[y]]") == 7 && p.is_accepting());
    }

    /// The configuration inside `depth` parentheses, before and after reading `probe` (popped
    /// back): whole, and cut to what `probe` popped.
    fn contents_at_depth(p: &mut Pda, depth: usize, probe: &[u8]) -> (Vec<u32>, Vec<u32>) {
        let open = vec![b'('; depth];
        assert_eq!(p.advance_bytes(&open), depth);
        let (mut full, mut cut) = (Vec::new(), Vec::new());
        assert!(p.configuration_content(&mut full, 1000));
        p.record_pops();
        let read = p.advance_bytes(probe);
        p.pop_bytes(read);
        assert!(p.popped_content(&mut cut, 1000));
        p.pop_bytes(depth);
        (full, cut)
    }

    #[test]
    fn a_configuration_cut_to_what_was_popped_matches_deeper_ones_alike_on_top() {
        let mut p = pda(r#"root ::= "(" root ")" | "x""#);
        // `x` ends the innermost `root` and pops its frame; inside one parenthesis that is the
        // bottom frame, so nothing is cut.
        let (full1, cut1) = contents_at_depth(&mut p, 1, b"x");
        assert_eq!(full1.len(), 3, "a state, one frame, the end: {full1:?}");
        assert_eq!(cut1, full1);
        let (full2, cut2) = contents_at_depth(&mut p, 2, b"x");
        let (full3, _) = contents_at_depth(&mut p, 3, b"x");
        assert_eq!(cut2, [full2[0], full2[1], STACK_CUT], "the top frame and a cut");
        assert!(matches_cut_content(&cut2, &full2) && matches_cut_content(&cut2, &full3));
        assert!(!matches_cut_content(&cut2, &full1), "the cut says frames remain below");
        assert!(!matches_cut_content(&cut1, &full2), "the whole stack was read: it must end there");
        // Reading nothing pops nothing: every stack is cut at its top.
        let (full0, _) = contents_at_depth(&mut p, 0, b"");
        let (_, cut_none) = contents_at_depth(&mut p, 2, b"");
        assert_eq!(cut_none, [full0[0], STACK_CUT]);
        assert!(matches_cut_content(&cut_none, &full3) && !matches_cut_content(&cut_none, &full0));
    }

    #[test]
    fn cut_contents_match_thread_by_thread() {
        let (s1, s2, r1, r2) = (3, 4, 7, 8);
        let full = [s1, r1, r2, STACK_END, s2, STACK_END];
        assert!(matches_cut_content(&[s1, r1, STACK_CUT, s2, STACK_END], &full));
        assert!(matches_cut_content(&[s1, STACK_CUT, s2, STACK_END], &full));
        assert!(matches_cut_content(&full, &full));
        assert!(!matches_cut_content(&[s1, r2, STACK_CUT, s2, STACK_END], &full), "another frame");
        assert!(!matches_cut_content(&[s1, r1, STACK_CUT, s2, STACK_CUT], &full), "the second stack is empty");
        assert!(!matches_cut_content(&[s1, r1, STACK_CUT], &full), "a thread more");
        assert!(!matches_cut_content(&[s2, STACK_END, s1, r1, STACK_CUT], &full), "threads in another order");
    }

    #[test]
    fn a_byte_over_the_budget_is_refused_without_overflow_and_the_state_is_as_before() {
        let mut p = pda(r#"root ::= "[" root "]" | "" "#);
        assert_eq!(p.advance_bytes(b"[[["), 3);
        let before = (p.byte_len(), p.state_bytes(), p.current_states().collect::<Vec<_>>());
        p.set_budget(StepBudget::new(5, usize::MAX));
        let read = p.advance_bytes(b"[[[[[[[[");
        assert!(read < 8 && p.budget().exceeded() && !p.overflowed(), "read {read}");
        assert!(!p.advance_byte(b']'), "an exceeded budget refuses every byte");
        p.pop_bytes(read);
        assert_eq!((p.byte_len(), p.state_bytes(), p.current_states().collect::<Vec<_>>()), before);
        // A byte limit: checked every so many visits, it refuses a byte before the state has
        // grown much past it.
        let limit = before.1 + 1000;
        p.set_budget(StepBudget::new(u64::MAX, limit));
        let read = p.advance_bytes(&[b'['; 2000]);
        assert!(read < 2000 && !p.overflowed(), "the state may not grow far past the byte limit");
        assert!(matches!(p.budget().stop(), Some(Stop::Bytes(b)) if b > limit && b < limit + 100_000));
        p.pop_bytes(read);
        assert_eq!(p.state_bytes(), before.1);
        p.set_budget(StepBudget::UNLIMITED);
        assert!(p.advance_bytes(b"]]]") == 3 && p.is_accepting());
    }

    #[test]
    fn ambiguity_beyond_the_bound_overflows_without_changing_the_state() {
        // Every "a" may open or continue a rule: the threads grow with the input.
        let mut p = pda(r#"root ::= x "b"
            x ::= "a" x | "a" y | ""
            y ::= "a" x "c" | """#);
        let mut read = 0;
        while p.advance_byte(b'a') {
            read += 1;
        }
        assert!(p.overflowed() && p.byte_len() == read && read > 0, "read {read}");
    }
}
