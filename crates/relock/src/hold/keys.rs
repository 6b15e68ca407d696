//! How names become keys and channels, following Redisson's `{name}` hash-tag rule so that
//! every key of a lock lands in the same Redis Cluster slot, and which names are refused.

use crate::error::{short, Error, Result};

/// Redisson's `prefixName`: `prefix:{name}`, or `prefix:name` when the name carries its own tag.
pub(crate) fn prefixed(prefix: &str, name: &str) -> String {
    if name.contains('{') {
        format!("{prefix}:{name}")
    } else {
        format!("{prefix}:{{{name}}}")
    }
}

/// Redisson's `suffixName`: `{name}:suffix`, or `name:suffix` when the name carries its own tag.
pub(crate) fn suffixed(name: &str, suffix: &str) -> String {
    if name.contains('{') {
        format!("{name}:{suffix}")
    } else {
        format!("{{{name}}}:{suffix}")
    }
}

/// The longest name a lock, semaphore or latch may have, in bytes. Redis takes keys of up to
/// 512 MB, but a name is sent with every call and printed in every error and log line: a
/// megabyte-long name is a bug in the caller, refused before anything is sent.
pub const MAX_NAME_LEN: usize = 1024;

/// Rejects names whose derived keys could not share a cluster slot, and names over
/// [`MAX_NAME_LEN`].
pub(crate) fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("name", "a lock name must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::invalid(
            "name",
            format!(
                "`{}` is longer than the {MAX_NAME_LEN} bytes a name may have; use a shorter name (a hash of a long one, say)",
                short(name)
            ),
        ));
    }
    if !name.contains('{') && name.contains('}') {
        // Without a `{`, relock wraps the whole name in braces for the keys it derives
        // (`prefix:{name}`): a `}` inside would end that tag early, and those keys would hash
        // to another cluster slot than the name's own key.
        return Err(Error::invalid(
            "name",
            format!(
                "`{}` contains `}}` without a `{{tag}}`; its keys could land in different cluster slots. Use a complete hash tag such as `orders:{{42}}`, or no braces",
                short(name)
            ),
        ));
    }
    if let Some(open) = name.find('{') {
        // Redis hashes only the text between the first `{` and the next `}`, and only if it is
        // non-empty. Without such a tag, `name` and `prefix:name` would hash differently.
        let valid = name[open + 1..].find('}').is_some_and(|close| close > 0);
        if !valid {
            return Err(Error::invalid(
                "name",
                format!(
                    "`{}` contains `{{` but no non-empty `{{tag}}`; its keys could land in \
                     different cluster slots. Use a complete hash tag such as `orders:{{42}}`, or no braces",
                    short(name)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_follow_redissons_rule_and_share_the_names_slot() {
        assert_eq!(suffixed("jobs", "timeout"), "{jobs}:timeout");
        assert_eq!(suffixed("a{t}b", "timeout"), "a{t}b:timeout");
        for name in ["jobs", "a{t}b"] {
            let slot = |k: &str| fred::util::redis_keyslot(k.as_bytes());
            assert_eq!(slot(name), slot(&suffixed(name, "timeout")), "{name}");
            assert_eq!(slot(name), slot(&prefixed("redisson_sc", name)), "{name}");
        }
    }

    #[test]
    fn broken_tags_and_empty_names_are_rejected() {
        for bad in ["", "a{b", "a{}b", "{}", "x}{"] {
            assert!(
                matches!(
                    validate_name(bad),
                    Err(Error::InvalidArgument { name: "name", .. })
                ),
                "{bad:?}"
            );
        }
    }
}
