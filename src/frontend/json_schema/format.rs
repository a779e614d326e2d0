//! `format`: each supported format is an ECMA-262 pattern (full match) lowered by the regex
//! front-end like any `pattern`. Each follows the grammar of the document the JSON Schema
//! specification names for it:
//!
//! * `date-time`, `date`, `time`: RFC 3339 section 5.6 (months have their day counts, February
//!   29 is always accepted);
//! * `duration`: the ABNF of RFC 3339 appendix A, exactly: units in order and contiguous from
//!   the largest written (`P1Y2M3D`, `PT1H2M3S`; `P1Y3D` and `PT1H3S` skip a unit and are not
//!   durations there), weeks alone (`P2W`);
//! * `email` (RFC 5321 section 4.1.2 `Mailbox`): a dot-atom or a quoted-string local part,
//!   `@`, a host name or an address literal (`[127.0.0.1]`, `[IPv6:::1]`); `idn-email` (RFC
//!   6531) also admits non-ASCII characters in atoms, quoted strings and labels;
//! * `hostname` and `idn-hostname`: labels of 1 to 63 characters (RFC 1123);
//! * `ipv4`: four decimal octets 0–255 without leading zeros (RFC 2673's dotted quad; a leading
//!   zero reads as octal in many parsers, so JSON Schema's test suite rejects it);
//! * `ipv6`: all RFC 4291 text forms, with an embedded IPv4 tail;
//! * `uri`, `uri-reference` (RFC 3986 `URI` and `URI-reference`: scheme, authority with
//!   user info, IP literal and port, the path forms, query, fragment) and `iri`,
//!   `iri-reference` (RFC 3987: the same with `ucschar`s, and `iprivate` in the query);
//! * `uri-template`: RFC 6570 (literals, `{op var:3,list*}` expressions);
//! * `uuid` (RFC 4122), `json-pointer` (RFC 6901), `relative-json-pointer`.
//!
//! Other formats (including `regex`, which cannot be checked by a grammar, and vendor formats
//! like `int32`) are annotations, as the specification says for formats an implementation
//! does not know.

const DATE: &str = r"\d{4}-(02-(0[1-9]|[12]\d)|(0[469]|11)-(0[1-9]|[12]\d|30)|(0[13578]|1[02])-(0[1-9]|[12]\d|3[01]))";
const TIME: &str = r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)";
const LABEL: &str = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const IDN_LABEL: &str = r"[A-Za-z0-9\u00A1-\uFFFF]([A-Za-z0-9\u00A1-\uFFFF-]{0,61}[A-Za-z0-9\u00A1-\uFFFF])?";
const ATOM: &str = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const IDN_ATOM: &str = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u00A1-\uFFFF-]+";
/// RFC 5321 `Quoted-string`: printable ASCII but `"` and `\`, or a `\`-quoted printable.
const QUOTED: &str = r#""([\x20\x21\x23-\x5B\x5D-\x7E]|\\[\x20-\x7E])*""#;
const IDN_QUOTED: &str = r#""([\x20\x21\x23-\x5B\x5D-\x7E\u00A0-\u{10FFFF}]|\\[\x20-\x7E])*""#;
const OCTET: &str = r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)";
/// RFC 3986 `sub-delims` (as class content).
const SUB_DELIMS: &str = r"!$&'()*+,;=";
/// RFC 3986 `unreserved` (as class content).
const UNRESERVED: &str = r"A-Za-z0-9\-._~";
/// RFC 3987 `ucschar` (as class content).
const UCSCHAR: &str = r"\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF\u{10000}-\u{1FFFD}\u{20000}-\u{2FFFD}\u{30000}-\u{3FFFD}\u{40000}-\u{4FFFD}\u{50000}-\u{5FFFD}\u{60000}-\u{6FFFD}\u{70000}-\u{7FFFD}\u{80000}-\u{8FFFD}\u{90000}-\u{9FFFD}\u{A0000}-\u{AFFFD}\u{B0000}-\u{BFFFD}\u{C0000}-\u{CFFFD}\u{D0000}-\u{DFFFD}\u{E1000}-\u{EFFFD}";
/// RFC 3987 `iprivate` (as class content), allowed in a query only.
const IPRIVATE: &str = r"\uE000-\uF8FF\u{F0000}-\u{FFFFD}\u{100000}-\u{10FFFD}";
const PCT: &str = "%[0-9A-Fa-f]{2}";

/// RFC 3986 `URI` and `URI-reference` (`iri`: RFC 3987's `IRI` and `IRI-reference`), given
/// the RFC 4291 IPv6 pattern.
fn uri_patterns(ipv6: &str, iri: bool) -> (String, String) {
    let unreserved = if iri { format!("{UNRESERVED}{UCSCHAR}") } else { UNRESERVED.to_string() };
    let private = if iri { IPRIVATE } else { "" };
    let pchar = format!("([{unreserved}{SUB_DELIMS}:@]|{PCT})");
    let segment_nz_nc = format!("([{unreserved}{SUB_DELIMS}@]|{PCT})+");
    let query = format!(r"(\?([{unreserved}{SUB_DELIMS}:@/?{private}]|{PCT})*)?");
    let fragment = format!("(#([{unreserved}{SUB_DELIMS}:@/?]|{PCT})*)?");
    // An IPv4 host is also a `reg-name`: no separate alternative needed.
    let ip_literal = format!(r"\[({ipv6}|[vV][0-9A-Fa-f]+\.[{UNRESERVED}{SUB_DELIMS}:]+)\]");
    let reg_name = format!("([{unreserved}{SUB_DELIMS}]|{PCT})*");
    let userinfo = format!("([{unreserved}{SUB_DELIMS}:]|{PCT})*");
    let authority = format!(r"({userinfo}@)?({ip_literal}|{reg_name})(:\d*)?");
    let path_abempty = format!("(/{pchar}*)*");
    let path_absolute = format!("/({pchar}+(/{pchar}*)*)?");
    let path_rootless = format!("{pchar}+(/{pchar}*)*");
    let path_noscheme = format!("{segment_nz_nc}(/{pchar}*)*");
    let scheme = r"[A-Za-z][A-Za-z0-9+\-.]*";
    let absolute = format!("{scheme}:(//{authority}{path_abempty}|{path_absolute}|{path_rootless})?{query}{fragment}");
    let relative = format!("(//{authority}{path_abempty}|{path_absolute}|{path_noscheme})?{query}{fragment}");
    let reference = format!("{absolute}|{relative}");
    (absolute, reference)
}

/// RFC 6570 `URI-Template`.
fn uri_template() -> String {
    // Any character but controls, space, `"`, `'`, `%`, `<`, `>`, `\`, `^`, `` ` ``, `{`,
    // `|`, `}` (and not `iprivate`/`ucschar` outside their ranges), or a percent-encoding.
    let literal = format!(r"[\x21\x23\x24\x26\x28-\x3B\x3D\x3F-\x5B\x5D\x5F\x61-\x7A\x7E{UCSCHAR}{IPRIVATE}]|{PCT}");
    let varchar = format!("([A-Za-z0-9_]|{PCT})");
    let varspec = format!(r"{varchar}(\.?{varchar})*(:[1-9]\d{{0,3}}|\*)?");
    let expression = format!(r"\{{[+#./;?&=,!@|]?{varspec}(,{varspec})*\}}");
    format!("({literal}|{expression})*")
}

/// The pattern (full match) of a supported format; `None` for formats treated as annotations.
pub(super) fn pattern(format: &str) -> Option<&'static str> {
    use std::sync::OnceLock;
    static TABLE: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let h16 = "[0-9A-Fa-f]{1,4}";
        let ipv4 = format!(r"({OCTET}\.){{3}}{OCTET}");
        let ls32 = format!("({h16}:{h16}|{ipv4})");
        let ipv6 = [
            format!("({h16}:){{6}}{ls32}"),
            format!("::({h16}:){{5}}{ls32}"),
            format!("({h16})?::({h16}:){{4}}{ls32}"),
            format!("(({h16}:){{0,1}}{h16})?::({h16}:){{3}}{ls32}"),
            format!("(({h16}:){{0,2}}{h16})?::({h16}:){{2}}{ls32}"),
            format!("(({h16}:){{0,3}}{h16})?::{h16}:{ls32}"),
            format!("(({h16}:){{0,4}}{h16})?::{ls32}"),
            format!("(({h16}:){{0,5}}{h16})?::{h16}"),
            format!("(({h16}:){{0,6}}{h16})?::"),
        ]
        .join("|");
        let ipv6 = format!("({ipv6})");
        let hostname = format!(r"{LABEL}(\.{LABEL})*");
        let idn_hostname = format!(r"{IDN_LABEL}(\.{IDN_LABEL})*");
        // RFC 3339 appendix A: each unit may be followed only by the next smaller one.
        let dur_time = r"T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S)";
        let dur_date = r"(\d+Y(\d+M(\d+D)?)?|\d+M(\d+D)?|\d+D)";
        let duration = format!(r"P({dur_date}({dur_time})?|{dur_time}|\d+W)");
        let address_literal = format!(r"\[({ipv4}|IPv6:{ipv6})\]");
        let (uri, uri_reference) = uri_patterns(&ipv6, false);
        let (iri, iri_reference) = uri_patterns(&ipv6, true);
        vec![
            ("date", DATE.to_string()),
            ("time", TIME.to_string()),
            ("date-time", format!("{DATE}[Tt]{TIME}")),
            ("duration", duration),
            ("email", format!(r"({ATOM}(\.{ATOM})*|{QUOTED})@({hostname}|{address_literal})")),
            ("idn-email", format!(r"({IDN_ATOM}(\.{IDN_ATOM})*|{IDN_QUOTED})@({idn_hostname}|{address_literal})")),
            ("hostname", hostname.clone()),
            ("idn-hostname", idn_hostname),
            ("ipv4", ipv4.clone()),
            ("ipv6", ipv6),
            ("uuid", "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}".to_string()),
            ("uri", uri),
            ("uri-reference", uri_reference),
            ("iri", iri),
            ("iri-reference", iri_reference),
            ("uri-template", uri_template()),
            ("json-pointer", "(/([^~/]|~[01])*)*".to_string()),
            ("relative-json-pointer", "(0|[1-9][0-9]*)(#|(/([^~/]|~[01])*)*)".to_string()),
        ]
    });
    table.iter().find(|(name, _)| *name == format).map(|(_, p)| p.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontend::regex::{Anchoring, Regex};

    fn check(format: &str, good: &[&str], bad: &[&str]) {
        let re = Regex::parse(pattern(format).unwrap()).unwrap();
        for g in good {
            assert!(re.is_match(g, Anchoring::FullMatch), "{format}: {g} should match");
        }
        for b in bad {
            assert!(!re.is_match(b, Anchoring::FullMatch), "{format}: {b} should not match");
        }
    }

    #[test]
    fn formats() {
        check("date", &["2024-02-29", "1999-12-31"], &["2024-02-30", "2024-13-01", "2024-04-31", "24-01-01"]);
        check(
            "date-time",
            &["2024-01-01T10:00:00Z", "2024-01-01t10:00:00.123+05:30"],
            &["2024-01-01 10:00:00Z", "2024-01-01T25:00:00Z"],
        );
        check("time", &["23:59:60Z"], &["23:59"]);
        check("duration", &["P1D", "PT1H30M", "P1Y2M", "P3W"], &["P", "PT", "P1H"]);
        check("email", &["a.b@example.com", "x@localhost"], &["a@", "@b", "a b@c"]);
        check("ipv4", &["192.168.0.1"], &["256.1.1.1", "1.2.3"]);
        check(
            "ipv6",
            &["::1", "2001:db8::ff00:42:8329", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8"],
            &["1:2:3:4:5:6:7:8:9", ":::", "12345::"],
        );
        check("uuid", &["123e4567-e89b-12d3-a456-426614174000"], &["123e4567e89b12d3a456426614174000"]);
        check("uri", &["https://example.com/a?b=c#d", "urn:isbn:123"], &["//example.com", "http://a b"]);
        check("uri-reference", &["../a/b?c#d", "//host:80/x", "", "http://x"], &["://", "a b"]);
        check("hostname", &["example.com", "a-b.c"], &["-a.com", "a..b"]);
        check("json-pointer", &["", "/a/b~0/c~1"], &["a", "/a~2"]);
        assert!(pattern("int32").is_none() && pattern("regex").is_none());
    }
}
