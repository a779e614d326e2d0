//! The single integration-test binary (STYLE.md §3.6): every suite is a module here.

mod support;

mod alloc;

mod cache;
mod cli;
mod earley;
mod ebnf;
mod fsm_hash;
mod json_builtin;
mod json_schema;
mod layering;
mod maskbench_ratchet;
mod matcher;
mod pool;
mod properties;
mod protocols;
mod schema_properties;
mod structural_tag;
mod tokenizer;
mod tokens;
mod toolbench;
