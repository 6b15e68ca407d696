//! Where a benchmark's results go: the text report, and `--json FILE` (`-` for stdout).

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::shared::CliError;

/// The destination of `--json`.
#[derive(Debug, Clone)]
pub(crate) enum JsonTo {
    Stdout,
    File(PathBuf),
}

impl JsonTo {
    /// The clap value parser: `-` is stdout, anything else a file whose folder must exist (told
    /// before the benchmark runs rather than after).
    pub(crate) fn from_arg(arg: &str) -> Result<JsonTo, String> {
        if arg == "-" {
            return Ok(JsonTo::Stdout);
        }
        let path = PathBuf::from(arg);
        check_folder(&path)?;
        Ok(JsonTo::File(path))
    }

    /// Writes `value` as pretty JSON, ending with a newline.
    pub(crate) fn write<T: serde::Serialize>(&self, value: &T) -> Result<(), CliError> {
        let mut text =
            serde_json::to_string_pretty(value).map_err(|e| CliError::Failed(e.to_string()))?;
        text.push('\n');
        match self {
            JsonTo::Stdout => std::io::stdout()
                .lock()
                .write_all(text.as_bytes())
                .map_err(|e| CliError::Failed(format!("writing the JSON to stdout: {e}"))),
            JsonTo::File(path) => std::fs::write(path, text)
                .map_err(|e| CliError::Failed(format!("writing {}: {e}", path.display()))),
        }
    }
}

/// An error unless the folder `path` would be written in exists.
pub(crate) fn check_folder(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("{} is a folder, not a file", path.display()));
    }
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
            Err(format!("{}: no such folder", dir.display()))
        }
        _ => Ok(()),
    }
}

/// The text report's stream: stdout, or stderr when stdout carries the JSON (`--json -`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Text {
    to_stderr: bool,
}

impl Text {
    pub(crate) fn new(json: Option<&JsonTo>) -> Text {
        Text {
            to_stderr: matches!(json, Some(JsonTo::Stdout)),
        }
    }

    /// Writes `args` as they are. A closed stream is ignored: the benchmark still cleans up
    /// (its clients release, its servers stop).
    pub(crate) fn write(self, args: std::fmt::Arguments<'_>) {
        let _ = if self.to_stderr {
            std::io::stderr().lock().write_fmt(args)
        } else {
            std::io::stdout().lock().write_fmt(args)
        };
    }
}

/// `println!` to a [`Text`].
macro_rules! outln {
    ($text:expr) => {
        $text.write(format_args!("\n"))
    };
    ($text:expr, $($arg:tt)*) => {
        $text.write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` to a [`Text`].
macro_rules! out {
    ($text:expr, $($arg:tt)*) => {
        $text.write(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln};
