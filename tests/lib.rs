//! The single integration-test binary: every suite is a module here (one link, one process).

mod support;

mod adversarial;
mod alloc;

mod cache;
mod compaction;
mod data_cases;
mod earley;
mod ebnf;
mod fsm_hash;
mod gguf;
mod json_builtin;
mod json_schema;
mod jump_forward;
mod layering;
mod maskbench_ratchet;
mod matcher;
mod pda;
mod pool;
mod prefetch;
mod properties;
mod protocols;
mod saved;
mod schema_depth;
mod schema_keyword_audit;
mod schema_properties;
mod serving_api;
mod structural_tag;
mod tokenizer;
mod tokens;
mod toolbench;
