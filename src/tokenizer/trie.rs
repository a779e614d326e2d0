//! The token trie of a vocabulary, laid over its byte-sorted order.
//!
//! Sorting the normal tokens by their bytes puts every trie node's subtree (the tokens that
//! share its prefix) in one contiguous run of sorted positions, in preorder. A node is
//! therefore a pair (sorted position where its run starts, depth): token `i` starts the nodes
//! at depths `lcp[i] + 1 ..= len(i)` (the shorter prefixes it shares with token `i - 1`
//! started earlier). Numbering nodes in that order (position, then depth) is a preorder, and
//! what the trie stores per node is where its run ends: a walk over the sorted vocabulary can
//! then skip a whole subtree in one step ([`TokenTrie::subtree_end`]), which is what lets a cache
//! entry accept or reject thousands of tokens at once (see `crate::cache`).
//!
//! The root (depth 0, every token) is not numbered.

/// Subtree ends of every node of the token trie of a [`super::Vocabulary`], numbered in
/// preorder (see the module docs).
#[derive(Clone, Debug)]
pub struct TokenTrie {
    /// Per sorted position `i`, the number of the node `(i, lcp[i] + 1)`; one entry more at the
    /// end (the node count).
    first_node: Box<[u32]>,
    /// Per node, the sorted position one past the last token of its subtree.
    end: Box<[u32]>,
    /// Per node, the byte it reads (the last byte of its prefix).
    byte: Box<[u8]>,
    /// Per node, its parent node, or [`TokenTrie::ROOT`] at depth 1. Parents come before their
    /// children, so a pass over the nodes in reverse order sees every child before its parent.
    parent: Box<[u32]>,
}

impl TokenTrie {
    /// The parent of the nodes at depth 1 (the root is not numbered).
    pub const ROOT: u32 = u32::MAX;

    /// The trie of the tokens at sorted positions `0..lcp.len()`, with bytes `bytes(i)` sharing
    /// `lcp[i]` bytes with their predecessor's.
    pub(super) fn new<'a>(lcp: &[u32], bytes: impl Fn(usize) -> &'a [u8]) -> Self {
        let n = lcp.len();
        let mut first_node = Vec::with_capacity(n + 1);
        let mut end: Vec<u32> = Vec::new();
        let (mut byte, mut parent) = (Vec::new(), Vec::new());
        // The nodes on the path to the current token, by depth - 1: they are still open.
        let mut open: Vec<u32> = Vec::new();
        for (i, &shared) in lcp.iter().enumerate() {
            let shared = shared as usize;
            // Every open node deeper than the shared prefix ends here.
            for node in open.drain(shared.min(open.len())..) {
                end[node as usize] = i as u32;
            }
            first_node.push(end.len() as u32);
            for &b in &bytes(i)[shared..] {
                parent.push(open.last().copied().unwrap_or(Self::ROOT));
                byte.push(b);
                open.push(end.len() as u32);
                end.push(0);
            }
        }
        for node in open {
            end[node as usize] = n as u32;
        }
        first_node.push(end.len() as u32);
        TokenTrie {
            first_node: first_node.into_boxed_slice(),
            end: end.into_boxed_slice(),
            byte: byte.into_boxed_slice(),
            parent: parent.into_boxed_slice(),
        }
    }

    /// How many nodes the trie has (the root not counted).
    pub fn node_count(&self) -> usize {
        self.end.len()
    }

    /// The node of the prefix of depth `depth` of the token at sorted position `pos`, given
    /// `pos` starts it: `lcp[pos] < depth <= len(pos)`.
    #[inline]
    pub fn node(&self, lcp: &[u32], pos: usize, depth: usize) -> usize {
        debug_assert!((lcp[pos] as usize) < depth);
        self.first_node[pos] as usize + depth - lcp[pos] as usize - 1
    }

    /// The sorted position one past the last token of `node`'s subtree.
    #[inline]
    pub fn subtree_end(&self, node: usize) -> usize {
        self.end[node] as usize
    }

    /// The byte `node` reads.
    #[inline]
    pub fn byte(&self, node: usize) -> u8 {
        self.byte[node]
    }

    /// The parent of `node`, or [`TokenTrie::ROOT`].
    #[inline]
    pub fn parent(&self, node: usize) -> u32 {
        self.parent[node]
    }

    /// Heap bytes used.
    pub fn memory_usage(&self) -> usize {
        (self.first_node.len() + self.end.len() + self.parent.len()) * 4 + self.byte.len()
    }
}

#[cfg(test)]
mod tests {
    use crate::tokenizer::VocabularyBuilder;

    #[test]
    fn subtrees_are_the_runs_sharing_a_prefix() {
        let words = ["a", "ab", "abc", "abd", "b", "ba", "ba", "c"];
        let vocab = VocabularyBuilder::new().tokens(words).build().unwrap();
        let trie = vocab.trie();
        let lcp = vocab.sorted_lcp();
        let n = vocab.sorted_token_ids().len();
        let mut nodes = 0;
        for pos in 0..n {
            let bytes = vocab.sorted_token_bytes(pos);
            for depth in lcp[pos] as usize + 1..=bytes.len() {
                let node = trie.node(lcp, pos, depth);
                assert_eq!(node, nodes, "preorder numbering");
                nodes += 1;
                let prefix = &bytes[..depth];
                let run = (pos..n).take_while(|&j| vocab.sorted_token_bytes(j).starts_with(prefix)).count();
                assert_eq!(trie.subtree_end(node), pos + run, "subtree of {prefix:?}");
                assert_eq!(trie.byte(node), bytes[depth - 1]);
                let parent = trie.parent(node);
                if depth == 1 {
                    assert_eq!(parent, super::TokenTrie::ROOT);
                } else {
                    assert_eq!(
                        parent as usize,
                        trie.node(lcp, (0..=pos).rev().find(|&j| lcp[j] < depth as u32 - 1).unwrap(), depth - 1)
                    );
                }
            }
        }
        // a ab abc abd b ba c: the duplicate `ba` starts no node.
        assert_eq!(trie.node_count(), 7);
        assert_eq!(nodes, 7);
    }
}
