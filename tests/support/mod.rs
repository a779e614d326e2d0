//! Shared test helpers: fixtures, the reference recognizer, random grammar strategies, the
//! data-driven case files.

pub mod case_file;
pub mod fixtures;
pub mod gen;
pub mod json_text;
pub mod oracle_check;
pub mod reference;
pub mod small_vocab;
