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
