//! Arrays: `items`, `prefixItems` (and draft-4 array `items` / `additionalItems`, normalized
//! to these), `minItems`/`maxItems`, `contains`/`minContains`/`maxContains`, `uniqueItems`,
//! `unevaluatedItems`.
//!
//! Counts are repetitions (`item ("," item){m,n}`), never copies, so `maxItems: 100000` costs
//! what `maxItems: 2` does; the automaton builder keeps a counter for large bounds.

use super::lower::{choice, is_never, never, seq, Lowerer};
use super::model::{Field, Keywords, Kw, Num, Schema};
use super::SchemaError;
use crate::grammar::Expr;

impl<'a> Lowerer<'a> {
    /// The body of an `array` schema's rule.
    pub(super) fn array(&mut self, k: &Keywords<'a>, ptr: &str, level: u32) -> Result<Expr, SchemaError> {
        // Bounds past 10^9 items are as good as none (and keep the counters small).
        let count = |name: &str, v: &Option<Num<'_>>| Lowerer::count(ptr, name, v, 1_000_000_000);
        let min_items = count("minItems", &k.min_items)?.unwrap_or(0);
        let mut max_items = count("maxItems", &k.max_items)?;
        let no_prefix = Vec::new();
        let prefix: &[Schema<'a>] = match &k.prefix_items {
            None => &no_prefix,
            Some(Field::Ok(p)) => p,
            Some(Field::Wrong(_)) => return Err(Lowerer::invalid(ptr, "`prefixItems` must be an array")),
        };
        // Strict mode: no items beyond `prefixItems` unless `items` says.
        let strict_rest = Schema::Bool(!self.opts.strict_mode || prefix.is_empty());
        let rest_schema = k.items_schema().or_else(|| k.unevaluated_items.clone()).unwrap_or(strict_rest);

        let unique = matches!(k.unique_items, Some(Field::Ok(true)));
        if unique && prefix.is_empty() && !k.has(Kw::Contains) {
            if let Some(body) = self.unique_array(&rest_schema, (min_items, max_items), level, ptr)? {
                return Ok(body);
            }
        }

        let mut elems = Vec::with_capacity(prefix.len());
        for (i, p) in prefix.iter().enumerate() {
            let e = self.schema(p, &format!("{ptr}/prefixItems/{i}"), level + 1)?;
            if is_never(&e) {
                max_items = Some(max_items.map_or(i as u64, |x| x.min(i as u64)));
                break;
            }
            elems.push(e);
        }
        let mut rest = self.schema(&rest_schema, &format!("{ptr}/items"), level + 1)?;

        // contains: exact for "at least one" over a plain `items` list.
        if let Some(c) = &k.contains {
            let min_c = count("minContains", &k.min_contains)?.unwrap_or(1);
            let max_c = count("maxContains", &k.max_contains)?;
            let simple = prefix.is_empty() && min_c == 1 && max_c.is_none() && min_items <= 1 && max_items.is_none();
            if simple {
                let cptr = format!("{ptr}/contains");
                let both = self.merger().merge_pair(&rest_schema, c, &cptr)?;
                let hit = self.schema(&both, &cptr, level + 1)?;
                let comma = self.layout.comma(level);
                let body = seq(vec![
                    self.layout.open("[", level),
                    Expr::star(Expr::Seq(vec![rest.clone(), comma.clone()])),
                    hit,
                    Expr::star(Expr::Seq(vec![comma, rest])),
                    self.layout.close("]", level),
                ]);
                self.unique_items(k, ptr, max_items)?;
                return Ok(body);
            }
            if min_c > 0 {
                self.relax("contains", ptr, "contains with counts, prefixItems or item bounds is not enforced")?;
            } else if max_c.is_some() {
                self.relax("maxContains", ptr, "maxContains is not enforced")?;
            }
        }
        self.unique_items(k, ptr, max_items)?;

        if let Some(mx) = max_items {
            elems.truncate(mx.min(elems.len() as u64) as usize);
        }
        let k = elems.len() as u64;
        if is_never(&rest) {
            max_items = Some(max_items.map_or(k, |x| x.min(k)));
            rest = never();
        }
        if max_items.is_some_and(|x| x < min_items) {
            return Ok(never());
        }
        let comma = self.layout.comma(level);
        // Elements from index `i` on (the element at `i` included, no leading comma).
        let clamp = |x: u64| x.min(u64::from(u32::MAX)) as u32;
        let mut tail: Option<Expr> = None; // elements from index `k` on, when any may exist
        if max_items.is_none_or(|x| x > k) && !is_never(&rest) {
            let at_least = min_items.saturating_sub(k).max(1);
            let more_min = clamp(at_least - 1);
            let more_max = max_items.map(|x| clamp(x - k - 1));
            tail = Some(Expr::Seq(vec![
                rest.clone(),
                Expr::repeat(Expr::Seq(vec![comma.clone(), rest]), more_min, more_max),
            ]));
        }
        for i in (0..elems.len()).rev() {
            // Element `i`, then optionally (or necessarily) a comma and the elements after it.
            let after = tail.take().map(|t| {
                let next = Expr::Seq(vec![comma.clone(), t]);
                if (i as u64 + 1) < min_items {
                    next
                } else {
                    Expr::opt(next)
                }
            });
            let mut s = vec![elems[i].clone()];
            s.extend(after);
            tail = Some(Expr::Seq(s));
        }
        let empty = self.layout.empty("[", "]");
        let Some(body) = tail else {
            return Ok(if min_items == 0 { empty } else { never() });
        };
        let full = seq(vec![self.layout.open("[", level), body, self.layout.close("]", level)]);
        Ok(if min_items == 0 { choice(vec![empty, full]) } else { full })
    }

    fn unique_items(&mut self, k: &Keywords<'_>, ptr: &str, max_items: Option<u64>) -> Result<(), SchemaError> {
        if matches!(k.unique_items, Some(Field::Ok(true))) && max_items.is_none_or(|x| x > 1) {
            self.relax("uniqueItems", ptr, "items are not checked for uniqueness")?;
        }
        Ok(())
    }
}
