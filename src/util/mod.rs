//! Layer 0: small data structures that know nothing of grammars or tokens.
//!
//! * [`background_drop`] frees large values (evicted compiled grammars) on a thread of its
//!   own, so that no compile pays for freeing another grammar.
//! * [`bounded_cache`] is the least-recently-used map, bounded by a total weight, under every
//!   cache of the engine.
//! * [`budget`] counts the work of one matcher call against its limit (per-step bound).
//! * [`cancel`] carries a compile's deadline and cancellation token to the loops that check it.
//! * [`bitset`] holds [`TokenBitmask`], the `u32` word layout serving engines use for their
//!   int32 bitmask tensors (bit `i % 32` of word `i / 32` is token `i`).
//! * [`hash`] fixes the hashers: a fast non-cryptographic one for in-memory maps and a
//!   stable 64-bit one (xxh3) for keys that must agree across processes and grammars.
//! * [`id`] makes the typed ids (`StateId`, `RuleId`, `TokenId`): `u32` newtypes that index
//!   their tables.
//! * [`interner`] numbers distinct slices (state sets, edge signatures) in one arena, so the
//!   automaton passes allocate per pass rather than per state.
//! * [`json`] names JSON value kinds for error messages and hashes values without
//!   serializing them (cache keys).
//! * [`utf8`] turns code-point ranges into UTF-8 byte-range sequences, which is how
//!   character classes reach the byte-level automata.
//! * [`sentinel`] gives every token id a byte string no text can produce, so grammar elements
//!   that name a token by id (`Token(...)`) are byte-level too.

pub mod background_drop;
pub mod bitset;
pub mod bounded_cache;
pub mod budget;
pub mod byteset;
pub mod cancel;
pub mod hash;
pub mod id;
pub mod interner;
pub mod json;
pub mod ranges;
pub mod scc;
pub mod sentinel;
pub mod small_set;
pub mod utf8;

pub use bitset::TokenBitmask;
