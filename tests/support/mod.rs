//! Shared test helpers: fixtures, the reference recognizer, random grammar strategies.

pub mod gen;
pub mod reference;
pub mod small_vocab;
pub mod fixtures;
pub mod json_text;
