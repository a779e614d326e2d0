//! [`Relaxations`]: the keywords met that are not enforced exactly, in the order met and
//! without repeats — or, with `strict_keywords`, the error for the first one.

use super::{Relaxation, SchemaError, SchemaErrorKind};
use crate::util::hash::FastSet;

/// The relaxations recorded so far (see the module docs).
#[derive(Debug, Default)]
pub(super) struct Relaxations {
    /// `strict_keywords`: a relaxation is an error.
    strict: bool,
    list: Vec<Relaxation>,
    seen: FastSet<Relaxation>,
}

impl Relaxations {
    pub(super) fn new(strict: bool) -> Self {
        Relaxations { strict, ..Relaxations::default() }
    }

    /// Records that `keyword` at `ptr` is not enforced exactly (`detail`: what is not), or
    /// fails when relaxations are errors.
    pub(super) fn relax(&mut self, keyword: &str, ptr: &str, detail: impl Into<String>) -> Result<(), SchemaError> {
        let detail = detail.into();
        if self.strict {
            return Err(SchemaError::new(ptr, SchemaErrorKind::Unsupported { keyword: keyword.into(), detail }));
        }
        let r = Relaxation {
            keyword: keyword.into(),
            pointer: if ptr.is_empty() { "#".into() } else { ptr.into() },
            detail,
        };
        if self.seen.insert(r.clone()) {
            self.list.push(r);
        }
        Ok(())
    }

    /// The relaxations, in the order met.
    pub(super) fn into_list(self) -> Vec<Relaxation> {
        self.list
    }
}
