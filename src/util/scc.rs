//! Strongly connected components of a directed graph (Tarjan's algorithm, iterative so that
//! deep graphs from untrusted grammars cannot overflow the stack).

/// The strongly connected component of every node, numbered in reverse topological order
/// (a component's successors have smaller numbers). `succ(n)` lists the successors of `n`.
pub fn strongly_connected_components<F, I>(n: usize, mut succ: F) -> Vec<u32>
where
    F: FnMut(usize) -> I,
    I: IntoIterator<Item = usize>,
{
    const UNVISITED: u32 = u32::MAX;
    let mut index = vec![UNVISITED; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![UNVISITED; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut next_index = 0u32;
    let mut next_comp = 0u32;
    // Call stack of (node, the rest of its successors).
    let mut calls: Vec<(usize, I::IntoIter)> = Vec::new();
    for root in 0..n {
        if index[root] != UNVISITED {
            continue;
        }
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        calls.push((root, succ(root).into_iter()));
        while let Some((v, succs)) = calls.last_mut() {
            let v = *v;
            if let Some(w) = succs.next() {
                if index[w] == UNVISITED {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, succ(w).into_iter()));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some((parent, _)) = calls.last() {
                low[*parent] = low[*parent].min(low[v]);
            }
            if low[v] == index[v] {
                loop {
                    let w = stack.pop().unwrap();
                    on_stack[w] = false;
                    comp[w] = next_comp;
                    if w == v {
                        break;
                    }
                }
                next_comp += 1;
            }
        }
    }
    comp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_and_chains() {
        // 0 -> 1 -> 2 -> 0 (cycle), 2 -> 3, 3 -> 3 (self loop), 4 alone
        let edges = [vec![1], vec![2], vec![0, 3], vec![3], vec![]];
        let c = strongly_connected_components(5, |v| edges[v].clone());
        assert_eq!(c[0], c[1]);
        assert_eq!(c[1], c[2]);
        assert_ne!(c[2], c[3]);
        assert!(c[3] < c[0], "successor components are numbered first");
        let deep: Vec<Vec<usize>> = (0..100_000).map(|i| if i + 1 < 100_000 { vec![i + 1] } else { vec![] }).collect();
        let c = strongly_connected_components(deep.len(), |v| deep[v].clone());
        assert_eq!(c[0], 99_999);
    }
}
