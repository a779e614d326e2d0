//! The `format` patterns on a table of inputs: each row's verdict is the one of the RFC the
//! JSON Schema specification names for the format (see `format.rs`), checked against the
//! pattern, and against the `jsonschema` crate's format checker (the judge of
//! `maskforge-llm`), whose known disagreements with the RFC are listed with the reason.
//! XGrammar's verdict is noted where it differs from the RFC (its format patterns, as of its
//! latest release), for the parity notes of issue 18.

use serde_json::json;

use super::format::pattern;
use crate::frontend::regex::{Anchoring, Regex};

/// One input: the format, the text, the RFC's verdict, and why the `jsonschema` crate
/// disagrees (`None`: it agrees).
struct Row {
    format: &'static str,
    text: &'static str,
    valid: bool,
    judge_differs: Option<&'static str>,
}

const fn ok(format: &'static str, text: &'static str) -> Row {
    Row { format, text, valid: true, judge_differs: None }
}

const fn bad(format: &'static str, text: &'static str) -> Row {
    Row { format, text, valid: false, judge_differs: None }
}

const fn bad_judge_accepts(format: &'static str, text: &'static str, why: &'static str) -> Row {
    Row { format, text, valid: false, judge_differs: Some(why) }
}

const fn ok_judge_rejects(format: &'static str, text: &'static str, why: &'static str) -> Row {
    Row { format, text, valid: true, judge_differs: Some(why) }
}

/// Skipped units: ISO 8601 allows them, RFC 3339's ABNF does not.
const SKIPS: &str = "checks unit order, not that each unit follows the next larger one";
const TEMPLATE_CASE: &str = "its variable names are lowercase ASCII only (RFC 6570: ALPHA)";

const ROWS: &[Row] = &[
    // duration: RFC 3339 appendix A.
    ok("duration", "P4Y"),
    ok("duration", "PT0S"),
    ok("duration", "P0D"),
    ok("duration", "P1M"),
    ok("duration", "PT1M"),
    ok("duration", "PT36H"),
    ok("duration", "P1DT12H"),
    ok("duration", "P2W"),
    ok("duration", "P4DT12H30M5S"),
    ok("duration", "P1Y2M3DT4H5M6S"),
    bad_judge_accepts("duration", "P1Y3D", SKIPS),  // XGrammar: rejects too
    bad_judge_accepts("duration", "PT1H3S", SKIPS), // XGrammar: rejects too
    bad_judge_accepts("duration", "P1WT1H", "lets a time follow weeks"),
    bad("duration", "P1Y2W"),
    bad("duration", "P1"),
    bad("duration", "P2S"),
    bad("duration", "P1D2H"),
    bad("duration", "P"),
    bad("duration", "PT"),
    bad("duration", "P1YT"),
    bad("duration", "P2D1Y"),
    bad("duration", "P1.5D"),
    // email: RFC 5321 `Mailbox`.
    ok("email", "joe.bloggs@example.com"),
    ok("email", "te~st@example.com"),
    ok("email", "~test@example.com"),
    ok("email", "test~@example.com"),
    ok("email", "a@b.c"),                      // XGrammar: rejects (a one-letter label after a dot)
    ok("email", "\"joe bloggs\"@example.com"), // XGrammar: accepts
    ok("email", "\"joe..bloggs\"@example.com"),
    ok("email", "\"joe@bloggs\"@example.com"),
    ok("email", "joe.bloggs@[127.0.0.1]"), // XGrammar: rejects (no address literals)
    ok("email", "joe.bloggs@[IPv6:::1]"),  // XGrammar: rejects
    bad("email", "2962"),
    bad("email", ".test@example.com"),
    bad("email", "test.@example.com"),
    bad("email", "te..st@example.com"),
    bad("email", "joe.bloggs@invalid=domain.com"),
    bad("email", "joe.bloggs@[127.0.0.300]"),
    bad("email", "a@-b.com"),
    bad("email", "a b@c.com"),
    bad("email", "\"a\"b@c.com"),
    // ipv4: dotted quad, no leading zeros.
    ok("ipv4", "192.168.0.1"),
    ok("ipv4", "0.0.0.0"),
    ok("ipv4", "255.255.255.255"),
    bad("ipv4", "256.256.256.256"),
    bad("ipv4", "127.0.0.0.1"),
    bad("ipv4", "127.0"),
    bad("ipv4", "0x7f000001"),
    bad("ipv4", "087.10.0.1"), // XGrammar: accepts (leading zeros)
    bad("ipv4", "1.2.3.4/24"),
    bad("ipv4", "1\u{09e8}7.0.0.1"),
    // uri: RFC 3986 `URI`.
    ok("uri", "http://foo.bar/?baz=qux#quux"),
    ok("uri", "http://foo.com/blah_(wikipedia)_blah#cite-1"),
    ok("uri", "http://foo.bar/?q=Test%20URL-encoded%20stuff"),
    ok("uri", "http://xn--nw2a.xn--j6w193g/"),
    ok("uri", "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com"),
    ok("uri", "http://223.255.255.254"),
    ok("uri", "ldap://[2001:db8::7]/c=GB?objectClass?one"), // XGrammar: rejects (no IP literals)
    ok("uri", "http://[v1.fe]/"),
    ok("uri", "mailto:John.Doe@example.com"),
    ok("uri", "urn:oasis:names:specification:docbook:dtd:xml:4.1.2"),
    ok("uri", "tel:+1-816-555-1212"),
    ok("uri", "s3://bucket/key"), // XGrammar: rejects (no digits in schemes)
    ok("uri", "http://h:8080/a/../b"),
    bad("uri", "//foo.bar/?baz=qux#quux"),
    bad("uri", "/abc"),
    bad("uri", "\\\\WINDOWS\\fileshare"),
    bad("uri", "abc"),
    bad("uri", "http:// shouldfail.com"),
    bad("uri", ":// should fail"),
    bad("uri", "bar,baz:foo"),
    bad("uri", "http://a#b#c"),
    bad("uri", "http://a/b[c]"),
    bad("uri", "http://[::1"),
    bad("uri", "http://h:8a/"),
    bad("uri", "http://example.com/%zz"),
    bad("uri", "http://ex\u{e4}mple.com/"),
    // uri-reference: RFC 3986 `URI-reference`.
    ok("uri-reference", "http://foo.bar/?baz=qux#quux"), // XGrammar: rejects (relative references only)
    ok("uri-reference", "//foo.bar/?baz=qux#quux"),
    ok("uri-reference", "/abc"),
    ok("uri-reference", ""),
    ok("uri-reference", "#fragment"),
    ok("uri-reference", "../a/b?c#d"),
    ok("uri-reference", "abc"),
    ok("uri-reference", "a:b"),
    bad("uri-reference", "\\\\WINDOWS\\fileshare"),
    bad("uri-reference", "#frag#ment"),
    bad("uri-reference", "#\\frag"),
    bad("uri-reference", "1a:b"),
    bad("uri-reference", "//[x]/"),
    // uri-template: RFC 6570.
    ok("uri-template", "http://example.com/dictionary/{term:1}/{term}"),
    ok("uri-template", "http://example.com/dictionary"),
    ok("uri-template", "dictionary/{term:1}/{term}"),
    ok("uri-template", "{+path}/here{?x,y*}"),
    ok_judge_rejects("uri-template", "{a.b}", "its variable names have no `.` (RFC 6570: varname)"),
    ok("uri-template", "/caf\u{e9}/{x}"), // XGrammar: rejects (no ucschar literals)
    ok_judge_rejects("uri-template", "{Term}", TEMPLATE_CASE),
    ok_judge_rejects("uri-template", "{x%4A}", "its percent-encodings are lowercase hex only"),
    bad("uri-template", "http://example.com/dictionary/{term:1}/{term"),
    bad("uri-template", "{var:10000}"),
    bad("uri-template", "{}"),
    bad("uri-template", "{a b}"),
    bad("uri-template", "100%"),
    bad("uri-template", "a|b"),
    bad("uri-template", "{+}"),
    bad("uri-template", "{a..b}"),
];

#[test]
fn format_patterns_follow_their_rfc_and_the_judge_disagrees_only_where_listed() {
    let mut wrong = Vec::new();
    for row in ROWS {
        let re = Regex::parse(pattern(row.format).expect("a supported format")).expect("a valid pattern");
        if re.is_match(row.text, Anchoring::FullMatch) != row.valid {
            wrong.push(format!("pattern: {} {:?} should be {}", row.format, row.text, row.valid));
        }
        let judge = jsonschema::options()
            .should_validate_formats(true)
            .build(&json!({"format": row.format}))
            .expect("a valid schema")
            .is_valid(&json!(row.text));
        let expected = row.valid != row.judge_differs.is_some();
        if judge != expected {
            wrong.push(format!("jsonschema: {} {:?} is {judge}, the table says {expected}", row.format, row.text));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
