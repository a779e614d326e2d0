//! Typed ids: `u32` newtypes made by one macro, [`define_id!`], so that a state id cannot be
//! passed where a rule id is meant, and every id kind has the same small API.
//!
//! An id is an index into the tables of its kind (`Vec`s and slices): tables index with it
//! directly (`table[id]`, see the `Index` impls the macro writes), and [`IdRange`] walks the
//! ids `0..n` of a table. The representation stays a `u32` (`#[repr(transparent)]`): hot
//! structures (Earley items, automaton edges) keep their size.

/// Defines a `u32` id newtype: `new(usize)` (checked), `from_u32`/`as_u32`, `index`/`as_usize`,
/// `Debug` as `Name(7)`, `Display` as the number, ordering and hashing as the number, and
/// `Index`/`IndexMut` on slices and `Vec`s.
///
/// `define_id! { /// A state of an automaton. pub struct StateId; }`
macro_rules! define_id {
    ($(#[$meta:meta])* $vis:vis struct $name:ident;) => {
        $(#[$meta])*
        // Serialized as the bare number (saved grammars).
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        #[repr(transparent)]
        $vis struct $name(u32);

        impl $name {
            /// The id with index `i`.
            ///
            /// # Panics
            /// When `i` does not fit in a `u32` (tables that large are rejected before).
            #[inline]
            pub fn new(i: usize) -> Self {
                Self(u32::try_from(i).expect(concat!(stringify!($name), " index overflows u32")))
            }
            /// The id whose number is `n`.
            #[inline]
            pub const fn from_u32(n: u32) -> Self {
                Self(n)
            }
            /// The id's number.
            #[inline]
            pub const fn as_u32(self) -> u32 {
                self.0
            }
            /// The index of the id in the tables of its kind.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
            /// The same as [`Self::index`].
            #[inline]
            pub const fn as_usize(self) -> usize {
                self.0 as usize
            }
            /// The ids `0..n`, for walking a table of `n` entries.
            #[inline]
            pub fn range(n: usize) -> $crate::util::id::IdRange<Self> {
                $crate::util::id::IdRange::new(Self(0), Self::new(n))
            }
        }

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0)
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(&self.0, f)
            }
        }

        impl $crate::util::id::Id for $name {
            #[inline]
            fn from_index(i: usize) -> Self {
                Self::new(i)
            }
            #[inline]
            fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl<T> ::std::ops::Index<$name> for [T] {
            type Output = T;
            #[inline]
            fn index(&self, id: $name) -> &T {
                &self[id.0 as usize]
            }
        }

        impl<T> ::std::ops::IndexMut<$name> for [T] {
            #[inline]
            fn index_mut(&mut self, id: $name) -> &mut T {
                &mut self[id.0 as usize]
            }
        }

        impl<T> ::std::ops::Index<$name> for Vec<T> {
            type Output = T;
            #[inline]
            fn index(&self, id: $name) -> &T {
                &self[id.0 as usize]
            }
        }

        impl<T> ::std::ops::IndexMut<$name> for Vec<T> {
            #[inline]
            fn index_mut(&mut self, id: $name) -> &mut T {
                &mut self[id.0 as usize]
            }
        }
    };
}

pub(crate) use define_id;

define_id! {
    /// A token of a vocabulary: its id, as serving engines number tokens (the bit `id % 32` of
    /// word `id / 32` of a token bitmask). The public API takes and gives plain `u32` ids; inside,
    /// lists of token ids (cache entries, sentinels) are typed so they are not mixed with
    /// positions in the byte-sorted vocabulary, which are `u32` too.
    pub struct TokenId;
}

impl TokenId {
    /// The bitmask word holding this token's bit.
    #[inline]
    pub const fn word(self) -> usize {
        self.0 as usize / 32
    }
    /// This token's bit within [`TokenId::word`].
    #[inline]
    pub const fn bit(self) -> u32 {
        1 << (self.0 % 32)
    }
}

/// What every id made by [`define_id!`] is: an index into the tables of its kind.
pub trait Id: Copy + Ord {
    /// The id with index `i` (panics past `u32::MAX`).
    fn from_index(i: usize) -> Self;
    /// Its index.
    fn index(self) -> usize;
}

/// The ids `start..end`, in order.
#[derive(Clone, Debug)]
pub struct IdRange<I> {
    next: usize,
    end: usize,
    _id: std::marker::PhantomData<I>,
}

impl<I: Id> IdRange<I> {
    /// The ids `start..end`.
    pub fn new(start: I, end: I) -> Self {
        IdRange { next: start.index(), end: end.index(), _id: std::marker::PhantomData }
    }
}

impl<I: Id> Iterator for IdRange<I> {
    type Item = I;
    #[inline]
    fn next(&mut self) -> Option<I> {
        (self.next < self.end).then(|| {
            self.next += 1;
            I::from_index(self.next - 1)
        })
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}

impl<I: Id> ExactSizeIterator for IdRange<I> {}

impl<I: Id> DoubleEndedIterator for IdRange<I> {
    #[inline]
    fn next_back(&mut self) -> Option<I> {
        (self.next < self.end).then(|| {
            self.end -= 1;
            I::from_index(self.end)
        })
    }
}

#[cfg(test)]
mod tests {
    define_id! {
        /// An id for the tests.
        struct TestId;
    }

    #[test]
    fn an_id_is_its_number() {
        let id = TestId::new(7);
        assert_eq!((id.as_u32(), id.index(), id.as_usize()), (7, 7, 7));
        assert_eq!(TestId::from_u32(7), id);
        assert_eq!(format!("{id:?} {id}"), "TestId(7) 7");
        assert!(TestId::new(3) < id);
        assert_eq!(std::mem::size_of::<TestId>(), 4);
    }

    #[test]
    #[should_panic(expected = "TestId index overflows u32")]
    fn new_rejects_indices_past_u32() {
        TestId::new(u32::MAX as usize + 1);
    }

    #[test]
    fn a_token_id_names_its_bitmask_bit() {
        let id = super::TokenId::new(70);
        assert_eq!((id.word(), id.bit()), (2, 1 << 6));
    }

    #[test]
    fn tables_index_with_ids() {
        let mut v = vec![10, 20, 30];
        v[TestId::new(1)] += 1;
        assert_eq!(v[TestId::new(1)], 21);
        assert_eq!(v.as_slice()[TestId::new(2)], 30);
        let ids: Vec<TestId> = TestId::range(v.len()).collect();
        assert_eq!(ids, [TestId::new(0), TestId::new(1), TestId::new(2)]);
        assert_eq!(TestId::range(3).next_back(), Some(TestId::new(2)));
        assert_eq!(TestId::range(3).len(), 3);
    }
}
