//! The crate-wide [`Error`]: one variant per layer, each wrapping that layer's typed error.

use crate::grammar::GrammarError;

/// Any error maskforge returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The grammar IR is malformed (undefined rule, empty language, ...).
    #[error(transparent)]
    Grammar(#[from] GrammarError),
}
