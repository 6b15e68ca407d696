//! Credentials never leave the client: every URL that appears in an error, a `Debug` or a
//! tracing field goes through [`url`] first.

/// Where `url` points, the same however it is written down: no credentials, no query, no
/// fragment, and no `/0` (the default database). For telling servers apart (the order of a
/// multi-lock's parts), never for connecting.
pub(crate) fn identity(url: &str) -> String {
    // From the redacted URL: a password that holds a `/`, `?` or `#` would otherwise end the
    // userinfo early below and leave part of itself in the place.
    let url = self::url(url);
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", &url));
    // The userinfo ends at the last `@` before the path (a password may hold `@`).
    let rest = parsed_userinfo(rest).map_or(rest, |u| &rest[u.len() + 1..]);
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let mut place = rest[..end].trim_end_matches('/').to_string();
    if let Some(stripped) = place.strip_suffix("/0") {
        place = stripped.to_string();
    }
    format!("{scheme}://{place}")
}

/// The userinfo of a URL (what follows the scheme), and the rest. A unix socket URL that starts
/// with its path has none, and in one whose path follows an `@` it ends at the first `@/` (the
/// path may hold an `@`; `connect::unix_url` splits it there too); elsewhere at the last `@`,
/// even if the password holds a `?`, `/` or `#` (fred refuses such a URL, and it is hidden
/// whole in the message that says so). An `@` in the query (a sentinel user `ops@corp`) moves
/// that split into the query: what comes before it is hidden, and `password=` values after it
/// are hidden wherever they stand.
fn split_userinfo<'a>(scheme: Option<&str>, rest: &'a str) -> (Option<&'a str>, &'a str) {
    if scheme.is_some_and(|s| s.to_ascii_lowercase().ends_with("unix")) {
        if rest.starts_with('/') {
            return (None, rest);
        }
        if let Some((u, _)) = rest.split_once("@/").filter(|(u, _)| !u.contains('/')) {
            return (Some(u), &rest[u.len() + 1..]);
        }
        // fred's own form, `user:password@host/path`: the userinfo ends before the host.
        if let Some(u) = parsed_userinfo(rest) {
            return (Some(u), &rest[u.len() + 1..]);
        }
    }
    match rest.rsplit_once('@') {
        Some((u, r)) => (Some(u), r),
        None => (None, rest),
    }
}

/// The userinfo as a URL parser reads it (what fred connects with): up to the last `@` before
/// the first `/`, `?` or `#`.
fn parsed_userinfo(rest: &str) -> Option<&str> {
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    rest[..authority_end].rfind('@').map(|at| &rest[..at])
}

/// `url` with its password (and any `...password=` query parameter) replaced by `***`. The user
/// name stays, since it helps to tell which ACL user failed.
///
/// `redis://app:s3cret@h:6379/0` → `redis://app:***@h:6379/0`;
/// `redis://:s3cret@h:6379` → `redis://:***@h:6379`;
/// `redis-sentinel://h:26379?sentinelServiceName=m&sentinelPassword=x` →
/// `redis-sentinel://h:26379?sentinelServiceName=m&sentinelPassword=***`.
pub(crate) fn url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, url),
    };
    let (userinfo, rest) = split_userinfo(scheme, rest);
    let (authority_and_path, query) = match rest.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (rest, None),
    };
    let mut out = String::with_capacity(url.len());
    if let Some(s) = scheme {
        out.push_str(s);
        out.push_str("://");
    }
    match userinfo.map(|u| (u, authority_and_path)) {
        Some((userinfo, host)) => {
            match userinfo.split_once(':') {
                Some((user, _password)) => {
                    out.push_str(user);
                    out.push_str(":***");
                }
                // `redis://secret@host`: fred takes a lone userinfo for a user name, but it
                // may well be a password written without its colon, so it is hidden too.
                None => out.push_str("***"),
            }
            out.push('@');
            out.push_str(host);
        }
        None => out.push_str(authority_and_path),
    }
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    let params: Vec<String> = out
        .split('&')
        .map(|p| match password_param(p) {
            Some((key_end, _)) => format!("{}=***", &p[..key_end]),
            None => p.to_string(),
        })
        .collect();
    params.join("&")
}

/// In `segment` (text between two `&`), a `...password=VALUE` parameter, whose key starts after
/// the last `?` or at the start: the key's end and the value.
fn password_param(segment: &str) -> Option<(usize, &str)> {
    let (head, value) = segment.split_once('=')?;
    let key = head.rsplit_once('?').map_or(head, |(_, k)| k);
    key.to_ascii_lowercase()
        .contains("password")
        .then_some((head.len(), value))
}

/// Replaces every occurrence of `secret_url`'s credentials in `text` (for messages of other
/// libraries that may quote the URL they were given).
pub(crate) fn in_text(text: &str, raw_url: &str) -> String {
    let mut out = text.replace(raw_url, &url(raw_url));
    for secret in secrets(raw_url) {
        out = out.replace(&secret, "***");
    }
    out
}

/// The secret parts of a URL, longest first: the password and any password query parameter's
/// value, each as written and percent-decoded (as a library that parsed the URL would quote
/// it). The password as relock splits the userinfo and as a URL parser does, where the two
/// differ (an `@` in a query or a socket's path): a message may quote either.
fn secrets(raw_url: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut add = |secret: &str| {
        if secret.is_empty() {
            return;
        }
        found.push(secret.to_string());
        let decoded = percent_encoding::percent_decode_str(secret).decode_utf8_lossy();
        if decoded != secret && !decoded.is_empty() {
            found.push(decoded.into_owned());
        }
    };
    let (scheme, rest) = match raw_url.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, raw_url),
    };
    let userinfos = [split_userinfo(scheme, rest).0, parsed_userinfo(rest)];
    for userinfo in userinfos.into_iter().flatten() {
        add(userinfo.split_once(':').map_or(userinfo, |(_, p)| p));
    }
    // Wherever they stand (see `url` for an `@` in the query).
    for p in raw_url.split('&') {
        if let Some((_, v)) = password_param(p) {
            add(v);
        }
    }
    // The longest first, so that a secret holding another is replaced whole.
    found.sort_by_key(|s| std::cmp::Reverse(s.len()));
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_replaced_and_users_kept() {
        for (raw, want) in [
            ("redis://app:s3cret@h:6379/0", "redis://app:***@h:6379/0"),
            ("redis://:s3cret@h:6379", "redis://:***@h:6379"),
            ("redis://s3cret@h:6379", "redis://***@h:6379"),
            ("redis://h:6379", "redis://h:6379"),
            (
                "redis-cluster://u:p%40ss@a:1,b:2",
                "redis-cluster://u:***@a:1,b:2",
            ),
            (
                "redis-sentinel://h:26379?sentinelServiceName=m&sentinelPassword=x1",
                "redis-sentinel://h:26379?sentinelServiceName=m&sentinelPassword=***",
            ),
            ("rediss://u:a:b@h:1", "rediss://u:***@h:1"),
            ("redis://app:hunter?2@h:6379", "redis://app:***@h:6379"),
            (
                "redis://app:a/b#c@h:6379/0?x=1",
                "redis://app:***@h:6379/0?x=1",
            ),
            (
                "redis-sentinel://h:1?sentinelServiceName=m&sentinelUsername=ops@corp&sentinelPassword=zz9",
                "redis-sentinel://h:***@corp&sentinelPassword=***",
            ),
            ("unix:///tmp/redis.sock", "unix:///tmp/redis.sock"),
            (
                "unix://app:s3cret@/tmp/redis.sock",
                "unix://app:***@/tmp/redis.sock",
            ),
            (
                "redis+unix://:pw@/tmp/a@b/redis.sock",
                "redis+unix://:***@/tmp/a@b/redis.sock",
            ),
            ("unix:///tmp/a@b/redis.sock", "unix:///tmp/a@b/redis.sock"),
        ] {
            assert_eq!(super::url(raw), want, "{raw}");
        }
    }

    #[test]
    fn secrets_in_foreign_text_are_replaced() {
        let raw = "redis://app:s3cret@h:6379?sentinelPassword=zz9";
        let text = format!("failed to connect to {raw}: bad password s3cret (zz9)");
        let out = super::in_text(&text, raw);
        assert!(!out.contains("s3cret") && !out.contains("zz9"), "{out}");
        assert!(out.contains("app:***@h:6379"), "{out}");

        // An `@` in the query, before the password parameter.
        let raw = "redis-sentinel://h:1?sentinelServiceName=m&sentinelUsername=ops@corp&sentinelPassword=zz9";
        let out = super::in_text(&format!("{raw}: wrong password zz9"), raw);
        assert!(!out.contains("zz9"), "{out}");

        // A unix socket's path with an `@`: the password alone is the secret.
        let raw = "unix://app:pw9x@/tmp/a@b/redis.sock";
        assert_eq!(super::secrets(raw), vec!["pw9x".to_string()]);
        let out = super::in_text(&format!("{raw}: wrong password pw9x at /tmp/a@b"), raw);
        assert!(!out.contains("pw9x") && out.contains("/tmp/a@b"), "{out}");

        // The password quoted alone, however the URL splits: fred's unix form with a host and
        // an `@` in the path, an `@` in the query after the userinfo, and a percent-encoded
        // password quoted decoded.
        for (raw, password) in [
            ("unix://u:S3cr3t@localhost/tmp/a@b/redis.sock", "S3cr3t"),
            ("unix://:S3cr3t@localhost/tmp/x@/s.sock", "S3cr3t"),
            (
                "redis-sentinel://:S3cr3t@h:26379?sentinelServiceName=m&sentinelUsername=ops@corp&sentinelPassword=zz9",
                "S3cr3t",
            ),
            ("unix://u:S3cr3t%40x@/p", "S3cr3t@x"),
            ("redis://u:S3cr3t%40x@h:1", "S3cr3t@x"),
        ] {
            let out = super::in_text(&format!("auth failed: password {password} rejected"), raw);
            assert_eq!(out, "auth failed: password *** rejected", "{raw}");
            assert!(!super::url(raw).contains(password), "{raw}");
            assert!(!crate::client::redact::identity(raw).contains("S3cr3t"), "{raw}");
        }
        assert_eq!(
            super::url("unix://u:S3cr3t@localhost/tmp/a@b/redis.sock"),
            "unix://u:***@localhost/tmp/a@b/redis.sock"
        );
        // A password that holds a `/` stays out of a server's identity too.
        assert_eq!(
            crate::client::redact::identity("redis://app:S3cr3t/x@h:6379/0"),
            "redis://h:6379"
        );
    }
}
