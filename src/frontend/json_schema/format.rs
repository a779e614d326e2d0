//! `format`: each supported format is an ECMA-262 pattern (full match) lowered by the regex
//! front-end like any `pattern`.
//!
//! Supported: `date-time`, `date`, `time`, `duration` (RFC 3339 / ISO 8601; months have their
//! day counts, February 29 is always accepted), `email` and `idn-email` (dot-atom local part,
//! host names as domain), `hostname` and `idn-hostname` (labels of 1 to 63 characters),
//! `ipv4`, `ipv6` (all RFC 4291 text forms, with an embedded IPv4 tail), `uuid`, `uri`,
//! `uri-reference`, `iri`, `iri-reference`, `uri-template`, `json-pointer`,
//! `relative-json-pointer`. Other formats (including `regex`, which cannot be checked by a
//! grammar, and vendor formats like `int32`) are annotations, as the specification says for
//! formats an implementation does not know.

const DATE: &str = r"\d{4}-(02-(0[1-9]|[12]\d)|(0[469]|11)-(0[1-9]|[12]\d|30)|(0[13578]|1[02])-(0[1-9]|[12]\d|3[01]))";
const TIME: &str = r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)";
const LABEL: &str = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const IDN_LABEL: &str = r"[A-Za-z0-9\u00A1-\uFFFF]([A-Za-z0-9\u00A1-\uFFFF-]{0,61}[A-Za-z0-9\u00A1-\uFFFF])?";
const ATOM: &str = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const IDN_ATOM: &str = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u00A1-\uFFFF-]+";
const OCTET: &str = r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)";
const URI_CHAR: &str = r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2}";
const SEG_NC: &str = r"[A-Za-z0-9\-._~!$&'()*+,;=@]|%[0-9A-Fa-f]{2}";
const ISEG_NC: &str = r"[A-Za-z0-9\-._~!$&'()*+,;=@\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF]|%[0-9A-Fa-f]{2}";
const IRI_CHAR: &str = r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=\u00A0-\uD7FF\uF900-\uFDCF\uFDF0-\uFFEF]|%[0-9A-Fa-f]{2}";

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
        let hostname = format!(r"{LABEL}(\.{LABEL})*");
        let idn_hostname = format!(r"{IDN_LABEL}(\.{IDN_LABEL})*");
        let dur_time = r"T(\d+H(\d+M)?(\d+S)?|\d+M(\d+S)?|\d+S)";
        let duration =
            format!(r"P(\d+W|\d+Y(\d+M)?(\d+D)?({dur_time})?|\d+M(\d+D)?({dur_time})?|\d+D({dur_time})?|{dur_time})");
        vec![
            ("date", DATE.to_string()),
            ("time", TIME.to_string()),
            ("date-time", format!("{DATE}[Tt]{TIME}")),
            ("duration", duration),
            ("email", format!(r"{ATOM}(\.{ATOM})*@({hostname}|\[{ipv4}\])")),
            ("idn-email", format!(r"{IDN_ATOM}(\.{IDN_ATOM})*@({idn_hostname}|\[{ipv4}\])")),
            ("hostname", hostname.clone()),
            ("idn-hostname", idn_hostname),
            ("ipv4", ipv4.clone()),
            ("ipv6", format!("({ipv6})")),
            ("uuid", "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}".to_string()),
            ("uri", format!(r"[A-Za-z][A-Za-z0-9+.\-]*:({URI_CHAR})*")),
            // A URI, or a relative reference whose first segment has no `:` (RFC 3986 4.2).
            ("uri-reference", format!(r"[A-Za-z][A-Za-z0-9+.\-]*:({URI_CHAR})*|({SEG_NC})*([/?#]({URI_CHAR})*)?")),
            ("iri", format!(r"[A-Za-z][A-Za-z0-9+.\-]*:({IRI_CHAR})*")),
            ("iri-reference", format!(r"[A-Za-z][A-Za-z0-9+.\-]*:({IRI_CHAR})*|({ISEG_NC})*([/?#]({IRI_CHAR})*)?")),
            ("uri-template", r#"([^\x00-\x20"'<>\\^`{|}]|\{[^{}\s]*\})*"#.to_string()),
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
