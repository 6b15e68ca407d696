//! What a Redis error means for the caller: the server's refusals that a retry cannot cure
//! (credentials, grants, configuration) as their own `Error` variants, a key that is not a
//! lock, and connection errors told in words (TLS hints, tidied I/O errors, no credentials).

use crate::client::redact;
use crate::client::settings::Settings;
use crate::error::Error;

/// What `lua/lib/shape.lua` found, from its `NOTALOCK <found>` error, without the script
/// location Redis appends (` script: <sha>, on @user_script:84.`).
pub(crate) fn not_a_lock_found(details: &str) -> String {
    let found = details.split_once("NOTALOCK ").map_or("", |(_, f)| f);
    let found = found.split_once(" script: ").map_or(found, |(f, _)| f);
    found.trim_end().to_string()
}

/// fred's error at connect time, typed: refused credentials, a refused permission and a bad
/// setting are not connection trouble (they are not transient); anything else is
/// [`connection_error`].
pub(crate) fn connect_error(s: &Settings, e: fred::error::Error) -> Error {
    if let Some(typed) = refusal(&redact::url(&s.url), "connect", "", &e) {
        return typed;
    }
    connection_error(s, e.to_string())
}

/// The server's refusals that a retry cannot cure, as their own variants.
pub(crate) fn refusal(
    url: &str,
    operation: &'static str,
    key: &str,
    e: &fred::error::Error,
) -> Option<Error> {
    let d = e.details();
    let has = |code: &str| {
        d.starts_with(code) || d.contains(&format!(" {code} ")) || d.contains(&format!(": {code}"))
    };
    if has("WRONGPASS") || has("NOAUTH") || d.contains("invalid username-password") {
        return Some(Error::Authentication {
            url: url.to_string(),
            source: e.clone(),
        });
    }
    // Inside a script Redis 7 does not say NOPERM for a refused channel or command.
    if has("NOPERM")
        || d.contains("can't publish to the channel")
        || d.contains("can't run this command")
        || d.contains("no permissions to")
    {
        return Some(Error::Permission {
            operation,
            server: url.to_string(),
            key: key.to_string(),
            source: e.clone(),
        });
    }
    if d.contains("DB index is out of range") || d.contains("invalid DB index") {
        return Some(Error::Configuration {
            url: url.to_string(),
            source: e.clone(),
        });
    }
    None
}

/// `Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }` (an I/O error's
/// `Debug`, which fred puts in its messages) as `Connection refused (os error 111)`.
pub(crate) fn tidy_io(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("Os { code: ") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let Some(inner) = tail
            .find(" }")
            .and_then(|end| tail.get("Os { code: ".len()..end))
        else {
            break;
        };
        let end = "Os { code: ".len() + inner.len();
        let code = inner.split(',').next().unwrap_or("").trim();
        let message = inner
            .split_once("message: \"")
            .map_or("", |(_, m)| m.trim_end_matches('"'));
        out.push_str(&format!("{message} (os error {code})"));
        rest = &tail[end + 2..];
    }
    out.push_str(rest);
    out
}

/// A connection error naming the server without credentials, with a hint for TLS trouble.
pub(crate) fn connection_error(s: &Settings, cause: String) -> Error {
    let cause = tidy_io(&cause);
    let mut cause = redact::in_text(&cause, &s.url);
    let tls = s.url.starts_with("rediss");
    if !tls
        && (cause.contains("reset by peer")
            || cause.contains("unexpected end of file")
            || cause.contains("UnexpectedEof"))
    {
        cause.push_str(
            "; the server closed the connection at once: it may speak TLS only (use a rediss:// URL)",
        );
    }
    if tls
        && (cause.contains("timed out")
            || cause.starts_with("no connection within")
            || cause.contains("InvalidContentType")
            || cause.contains("CorruptMessage"))
    {
        cause.push_str(
            "; no TLS handshake completed: the server may not speak TLS on this port (use a redis:// URL)",
        );
    }
    if cause.contains("Failed to connect to all sentinel nodes") {
        // fred drops each sentinel's own error (a refused connection, WRONGPASS).
        if cause.ends_with('.') {
            cause.pop();
        }
        cause.push_str(
            "; no sentinel accepted the connection and the credentials (a sentinel's own error \
             is not reported): the sentinels get sentinelUsername/sentinelPassword from the \
             URL's query if given, else the URL's user:password@ (relock::guide::operations, \
             Credentials)",
        );
    }
    if cause.contains("InvalidCertificate") || cause.contains("UnknownIssuer") {
        cause.push_str(
            "; the server's TLS certificate was rejected: give the CA that signed it \
             with ClientBuilder::tls_ca_pem, and use a host name (or IP) that the \
             certificate names",
        );
    }
    Error::Connection {
        url: redact::url(&s.url),
        cause,
    }
}
