//! `multipleOf` as a language: the decimal texts of the multiples of a number.
//!
//! A divisor `p / 10^j` (`p` a positive integer, `j` fraction digits: `0.25` is `25 / 10^2`)
//! divides `x` exactly when `x · 10^j` is an integer multiple of `p`. Read left to right, the
//! digits of `x` keep a residue `r = (digits so far) mod p`, updated by `r → (10 r + d) mod p`:
//! a finite automaton of `p` states per position, which the grammar spells as right-linear
//! rules (one per state). A text may end where the value it spells, scaled by the fraction
//! digits still missing, is a multiple: after `i` fraction digits, where
//! `r · 10^(j − i) ≡ 0 (mod p)`; past `j` fraction digits only zeros may follow. Divisors of a
//! power of ten (`2^a 5^b 10^c`) need no residue: a condition on the last digits.

use super::lower::Lowerer;
use super::number::{any_integer, dec_digit};
use super::{SchemaError, SchemaErrorKind};
use crate::grammar::{Expr, RuleId};

/// The largest residue automaton spelled as rules (`p · (j + 1)` states): bigger divisors are
/// reported as relaxed rather than grow the grammar without bound.
pub(super) const RESIDUE_STATES_MAX: u64 = 4096;

/// Multiples of `k` (positive) among canonical integer texts.
///
/// # Errors
/// [`SchemaErrorKind::Unsupported`] when the residue automaton would exceed
/// [`RESIDUE_STATES_MAX`] states.
pub(super) fn integer_multiples(l: &mut Lowerer<'_>, k: u64) -> Result<Expr, SchemaError> {
    if k == 1 {
        return Ok(any_integer());
    }
    if let Some(e) = power_of_ten_divisor_multiples(k) {
        return Ok(e);
    }
    residue_multiples(l, k, 0, false).ok_or_else(|| too_large(k, 0))
}

/// Multiples of `p / 10^j` among canonical number texts without exponent (an integer part,
/// and a fraction when `fraction`), or `None` when the automaton would exceed
/// [`RESIDUE_STATES_MAX`] states.
pub(super) fn residue_multiples(l: &mut Lowerer<'_>, p: u64, j: u32, fraction: bool) -> Option<Expr> {
    let states = p.checked_mul(u64::from(j) + 1)?;
    if p == 0 || states > RESIDUE_STATES_MAX {
        return None;
    }
    let integer: Vec<RuleId> = (0..p).map(|_| l.new_rule("mult")).collect();
    // frac[i - 1][r]: after i >= 1 fraction digits, residue r.
    let frac: Vec<Vec<RuleId>> = if fraction {
        (1..=j).map(|_| (0..p).map(|_| l.new_rule("mult_frac")).collect()).collect()
    } else {
        Vec::new()
    };
    let rules = ResidueRules { p, j, fraction, frac };
    for r in 0..p {
        let mut alts: Vec<Expr> = (0..10).map(|d| digit_then(d, integer[rules.residue(r, d)])).collect();
        alts.extend(rules.integer_end(r));
        l.define(integer[r as usize], Expr::Choice(alts));
    }
    for i in (1..=j).filter(|_| fraction) {
        for r in 0..p {
            let mut alts = Vec::new();
            if i < j {
                alts.extend((0..10).map(|d| digit_then(d, rules.frac[i as usize][rules.residue(r, d)])));
            } else if r == 0 {
                alts.push(Expr::star(Expr::literal("0"))); // past j digits: zeros only
            }
            if i < j && rules.scaled(r, j - i) == 0 {
                alts.push(Expr::Empty);
            }
            l.define(
                rules.frac[i as usize - 1][r as usize],
                if alts.is_empty() { super::lower::never() } else { Expr::Choice(alts) },
            );
        }
    }
    let first: Vec<Expr> = (1..10).map(|d| digit_then(d, integer[(d % p) as usize])).collect();
    let zero = Expr::Seq(vec![Expr::literal("0"), Expr::Choice(rules.integer_end(0))]);
    Some(Expr::Seq(vec![Expr::opt(Expr::literal("-")), Expr::Choice(vec![zero, Expr::Choice(first)])]))
}

/// The digit `d`, then the rule `next`.
fn digit_then(d: u64, next: RuleId) -> Expr {
    Expr::Seq(vec![dec_digit(d as u8, d as u8), Expr::Rule(next)])
}

/// The residue automaton of a divisor `p / 10^j`: its arithmetic, and the rules of its
/// fraction digits (`frac[i - 1][r]`: after `i` fraction digits, residue `r`).
struct ResidueRules {
    p: u64,
    j: u32,
    fraction: bool,
    frac: Vec<Vec<RuleId>>,
}

impl ResidueRules {
    /// The residue after appending the digit `d` to a prefix of residue `r`.
    fn residue(&self, r: u64, d: u64) -> usize {
        ((r * 10 + d) % self.p) as usize
    }

    /// `r · 10^n mod p`, without overflow.
    fn scaled(&self, r: u64, n: u32) -> u64 {
        (0..n).fold(r % self.p, |acc, _| acc * 10 % self.p)
    }

    /// How an integer part with residue `r` may end: here, when it is a multiple already, or
    /// with a fraction (at least one digit).
    fn integer_end(&self, r: u64) -> Vec<Expr> {
        let mut alts = Vec::new();
        let multiple = self.scaled(r, self.j) == 0;
        if multiple {
            alts.push(Expr::Empty);
        }
        if self.fraction {
            if self.j == 0 {
                if multiple {
                    alts.push(Expr::Seq(vec![Expr::literal("."), Expr::plus(Expr::literal("0"))]));
                }
            } else {
                let digits: Vec<Expr> = (0..10).map(|d| digit_then(d, self.frac[0][self.residue(r, d)])).collect();
                alts.push(Expr::Seq(vec![Expr::literal("."), Expr::Choice(digits)]));
            }
        }
        if alts.is_empty() {
            alts.push(super::lower::never());
        }
        alts
    }
}

/// Multiples of `k = 2^a 5^b 10^c` (with `a = 0` or `b = 0`) with `2^a 5^b` ∈ {1, 2, 5}: a
/// condition on the last digits; `None` for other divisors.
fn power_of_ten_divisor_multiples(k: u64) -> Option<Expr> {
    let mut m = k;
    let mut tens = 0;
    while m % 10 == 0 {
        m /= 10;
        tens += 1;
    }
    let zeros = Expr::repeat(Expr::literal("0"), tens, Some(tens));
    let digit_set = |ds: &[u8]| Expr::class(ds.iter().map(|&d| (u32::from(b'0' + d), u32::from(b'0' + d))), false);
    let (last, single) = match m {
        1 => (Expr::Empty, dec_digit(1, 9)),
        2 => (digit_set(&[0, 2, 4, 6, 8]), digit_set(&[2, 4, 6, 8])),
        5 => (digit_set(&[0, 5]), Expr::literal("5")),
        _ => return None,
    };
    // A positive integer whose decimal ends in `last` then `tens` zeros, or 0.
    let body = if m == 1 {
        Expr::Seq(vec![dec_digit(1, 9), Expr::star(dec_digit(0, 9)), zeros])
    } else {
        Expr::Seq(vec![
            Expr::Choice(vec![single, Expr::Seq(vec![dec_digit(1, 9), Expr::star(dec_digit(0, 9)), last])]),
            zeros,
        ])
    };
    Some(Expr::Seq(vec![Expr::opt(Expr::literal("-")), Expr::Choice(vec![Expr::literal("0"), body])]))
}

fn too_large(p: u64, j: u32) -> SchemaError {
    SchemaError::new(
        "#",
        SchemaErrorKind::Unsupported {
            keyword: "multipleOf".into(),
            detail: format!("a residue automaton of {p} × {} states is too large", j + 1),
        },
    )
}
