//! Merging states with equal suffixes (Revuz's register), before subset construction.

use super::flat::FlatFsm;
use super::Label;
use crate::util::cancel;
use crate::util::interner::SliceInterner;
use std::cell::RefCell;

/// Merges states that have the same finality and the same outgoing edges once their targets
/// are merged (Revuz's register, in DFS post-order). Such states accept the same language in
/// any automaton, deterministic or not, so this is sound before subset construction; on acyclic
/// parts it is already minimal. It is linear, and it removes most of the copies inlining makes
/// (every inlined string is a copy of the same few states that ends in the same place), so
/// subset construction runs on far fewer states. Returns `fsm` itself when nothing merges;
/// otherwise the representatives, numbered in breadth-first order from the start. Also returns
/// `fsm` itself once the compile's watch trips (`util::cancel`; the caller reports it).
pub(crate) fn merge_equal_suffixes(fsm: FlatFsm) -> FlatFsm {
    SCRATCH.with_borrow_mut(|scratch| {
        let out = merge_with(fsm, scratch);
        if scratch.rep.capacity() > 1 << 16 {
            *scratch = Scratch::default();
        }
        out
    })
}

thread_local! {
    /// Buffers reused by every call on this thread (a grammar's rule automata are built by the
    /// thousands, most of them small: per-call allocations were a fifth of this pass's time).
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The working memory of [`merge_equal_suffixes`] (contents are meaningless between calls).
///
/// # Why it is per thread
/// One value lives in a `thread_local!` (`SCRATCH`) rather than being passed down by the
/// caller: the pass runs once per rule automaton, thousands of times per grammar, from the
/// automaton builder on whichever thread compiles (several at once in a server), and an
/// explicit value would have to travel through every construction function for no other use.
/// It holds only buffers that every call clears before use, so results never depend on
/// earlier calls. Bound: after a call whose automaton grew `rep` past 2^16 states the buffers
/// are dropped, so a thread keeps at most a few megabytes.
#[derive(Default)]
struct Scratch {
    /// Per state, its representative once finished; itself before.
    rep: Vec<u32>,
    /// Per state: 0 unseen, 1 on the DFS stack, 2 finished.
    state: Vec<u8>,
    /// Signatures `[(Epsilon, finality), (label, rep of target)...]` (sorted, deduplicated; the
    /// epsilon pseudo-edge, which no epsilon-free automaton has, carries the finality), and per
    /// signature id the state that registered it.
    register: SliceInterner<(Label, u32)>,
    owner: Vec<u32>,
    sig: Vec<(Label, u32)>,
    stack: Vec<(u32, usize)>,
    new_id: Vec<u32>,
    queue: Vec<u32>,
}

fn merge_with(fsm: FlatFsm, scratch: &mut Scratch) -> FlatFsm {
    let n = fsm.state_len();
    const UNSEEN: u32 = u32::MAX;
    let Scratch { rep, state, register, owner, sig, stack, new_id, queue } = scratch;
    rep.clear();
    rep.extend(0..n as u32);
    state.clear();
    state.resize(n, 0);
    register.clear();
    owner.clear();
    stack.clear();
    stack.push((fsm.start, 0));
    state[fsm.start as usize] = 1;
    let mut finished = 0usize;
    while let Some(&mut (s, ref mut pos)) = stack.last_mut() {
        let edges = fsm.edges(s);
        if *pos < edges.len() {
            let t = edges[*pos].1;
            *pos += 1;
            if state[t as usize] == 0 {
                state[t as usize] = 1;
                stack.push((t, 0));
            }
            continue;
        }
        stack.pop();
        if cancel::check_at(finished, "suffix merging").is_err() {
            return fsm;
        }
        finished += 1;
        state[s as usize] = 2;
        sig.clear();
        sig.push((Label::Epsilon, fsm.finals[s as usize] as u32));
        sig.extend(edges.iter().map(|&(l, t)| (l, rep[t as usize])));
        sig[1..].sort_unstable();
        sig.dedup();
        let (id, new) = register.intern(sig);
        if new {
            owner.push(s);
        } else {
            rep[s as usize] = owner[id as usize];
        }
    }
    // Every state was reached and registered as its own representative.
    if register.len() == n {
        return fsm;
    }
    new_id.clear();
    new_id.resize(n, UNSEEN);
    let mut out = FlatFsm::with_capacity(register.len(), fsm.edge_len());
    // Number the representatives from the start, in BFS order, for a stable layout.
    let start = rep[fsm.start as usize];
    new_id[start as usize] = out.add_state(fsm.finals[start as usize]);
    out.start = 0;
    queue.clear();
    queue.push(start);
    let mut qi = 0;
    while qi < queue.len() {
        let s = queue[qi];
        qi += 1;
        for &(l, t) in fsm.edges(s) {
            let t = rep[t as usize];
            if new_id[t as usize] == UNSEEN {
                new_id[t as usize] = out.add_state(fsm.finals[t as usize]);
                queue.push(t);
            }
            out.push_edge(l, new_id[t as usize]);
        }
        out.sort_open_edges();
        out.end_state();
    }
    out
}
