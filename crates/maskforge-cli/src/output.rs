//! Standard output that a closed pipe ends quietly: `maskforge mask ... | head` stops when
//! `head` has read enough, as any Unix tool does, instead of panicking in `println!`.

/// Why a command stopped early.
#[derive(Debug)]
pub enum Failure {
    /// Bad input or a failed step: printed as `error: ...`, exit code 2.
    Message(String),
    /// The reader of standard output went away: exit quietly.
    BrokenPipe,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::Message(message)
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Failure::Message(message.to_string())
    }
}

/// A write error on standard output.
pub fn stdout_error(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::BrokenPipe
    } else {
        Failure::Message(format!("cannot write to standard output: {e}"))
    }
}

/// `println!` that returns [`Failure`] instead of panicking (use inside a function returning
/// `Result<_, Failure>`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err($crate::output::stdout_error)?
    }};
}
pub(crate) use outln;

/// `text` on one line: line breaks (a parser's excerpt, a nested error) become ` | `, so that
/// every error is one line of standard error.
pub fn one_line(text: &str) -> String {
    text.lines().map(str::trim_end).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" | ")
}

/// Replaces the panic message (and its backtrace hint) with one `error: internal error: ...`
/// line on standard error: a panic is a bug to report, not a trace to show a user.
pub fn report_panics_in_one_line() {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("error: internal error (please report): {}{at}", one_line(&what));
    }));
}
