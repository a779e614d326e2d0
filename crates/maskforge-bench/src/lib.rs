//! maskforge's measuring tools, beside the library: the MaskBench runner ([`maskbench`]), the
//! tool-calling benchmark ([`toolbench`]), the soak ([`soak`]: long multi-threaded runs checked
//! against the oracle), percentile summaries ([`stats`]) and the argument helpers of the
//! profiling programs in `src/bin/` ([`cli`]).
//!
//! The `maskforge` command (`crates/maskforge-cli`) drives [`maskbench`] and [`toolbench`] as its
//! `maskbench` and `toolbench` subcommands; the library's own benches reuse [`stats`].

#![warn(missing_docs)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod allocator;
pub mod cli;
pub mod maskbench;
pub mod soak;
pub mod stats;
pub mod toolbench;
