//! Writing results to stdout the way Unix tools do: a reader that went away (`| head -1`) ends
//! the output quietly, and any other failure (`> /dev/full`) is an error that names stdout.

use std::io::{ErrorKind, Write};

use super::EXIT_USAGE;

/// Writes `text` to stdout and flushes it.
///
/// # Errors
/// The exit code to end with, after the error was printed on stderr: [`EXIT_USAGE`] when
/// stdout cannot take the output (a full disk, a closed file). A closed pipe is not an error.
pub(super) fn emit(command: &str, text: &str) -> Result<(), i32> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(e) => {
            eprintln!("codemode {command}: cannot write the output to stdout: {e}");
            Err(EXIT_USAGE)
        }
    }
}
