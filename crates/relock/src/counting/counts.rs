//! The counting kinds' counts: the limit a count argument may reach, its check, a count read
//! with `GET`, and the error of a script reply of a shape the script never sends.

use crate::client::inner::Inner;
use crate::error::{Error, Result};

/// The most permits one call may take, release or set, and the most a semaphore may hold:
/// the scripts compare counts as Lua numbers, which are exact only up to 2^53.
pub(crate) const MAX_COUNT: u64 = 1_000_000_000_000_000;

/// A script reply of a shape the script never sends (a protocol error).
pub(crate) fn unexpected(operation: &'static str, inner: &Inner, reply: &[i64]) -> Error {
    Error::Redis {
        operation,
        server: inner.server(),
        source: fred::error::Error::new(
            fred::error::ErrorKind::Protocol,
            format!("unexpected {operation} reply {reply:?}"),
        ),
    }
}

/// Rejects a permit or count argument of 0 or above [`MAX_COUNT`].
pub(crate) fn validate_count(name: &'static str, n: u64, what: &str) -> Result<()> {
    if n == 0 {
        return Err(Error::invalid(
            name,
            format!("0 {what} changes nothing; pass at least 1"),
        ));
    }
    if n > MAX_COUNT {
        return Err(Error::invalid(
            name,
            format!("{n} {what} is more than the 10^15 supported (counts must stay exact as Lua numbers); pass at most 1000000000000000"),
        ));
    }
    Ok(())
}

/// Parses a count read with GET: missing = 0, negative = 0; not an integer → `WrongType`.
pub(crate) fn parse_count(value: Option<String>, key: &str) -> Result<u64> {
    match value {
        None => Ok(0),
        Some(v) => v
            .parse::<i64>()
            .map(|n| n.max(0) as u64)
            .map_err(|_| Error::WrongType {
                key: key.to_string(),
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_of_zero_or_above_the_limit_are_rejected_naming_the_argument() {
        for bad in [0, MAX_COUNT + 1, u64::MAX] {
            let e = validate_count("n", bad, "permits").unwrap_err();
            assert!(
                matches!(&e, Error::InvalidArgument { name: "n", reason } if reason.contains("pass")),
                "{e}"
            );
        }
        validate_count("n", MAX_COUNT, "permits").unwrap();
        validate_count("n", 1, "permits").unwrap();
    }

    #[test]
    fn counts_read_as_missing_negative_or_not_a_number() {
        assert_eq!(parse_count(None, "k").unwrap(), 0);
        assert_eq!(parse_count(Some("-3".into()), "k").unwrap(), 0);
        assert_eq!(parse_count(Some("7".into()), "k").unwrap(), 7);
        assert!(matches!(
            parse_count(Some("x".into()), "k"),
            Err(Error::WrongType { key }) if key == "k"
        ));
    }
}
