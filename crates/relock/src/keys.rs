//! Key and channel names of one lock, following Redisson's `{name}` hash-tag rule so that every
//! key of a lock lands in the same Redis Cluster slot.

use crate::error::{Error, Result};

/// The Redis names that belong to one lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockKeys {
    /// The hash holding `<client_id>:<owner>` → hold count. It is the lock's name itself.
    pub(crate) lock: String,
    /// Where releases are published.
    pub(crate) channel: String,
    /// The fencing counter.
    pub(crate) token: String,
}

impl LockKeys {
    pub(crate) fn new(name: &str) -> Result<Self> {
        validate_name(name)?;
        Ok(LockKeys {
            lock: name.to_string(),
            channel: prefixed("redisson_lock__channel", name),
            token: prefixed("redisson_lock_token", name),
        })
    }
}

/// Redisson's `prefixName`: `prefix:{name}`, or `prefix:name` when the name carries its own tag.
pub(crate) fn prefixed(prefix: &str, name: &str) -> String {
    if name.contains('{') {
        format!("{prefix}:{name}")
    } else {
        format!("{prefix}:{{{name}}}")
    }
}

/// Rejects names whose derived keys could not share a cluster slot.
fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("name", "a lock name must not be empty"));
    }
    if let Some(open) = name.find('{') {
        // Redis hashes only the text between the first `{` and the next `}`, and only if it is
        // non-empty. Without such a tag, `name` and `prefix:name` would hash differently.
        let valid = name[open + 1..].find('}').is_some_and(|close| close > 0);
        if !valid {
            return Err(Error::invalid(
                "name",
                format!(
                    "`{name}` contains `{{` but no non-empty `{{tag}}`; its keys could land in \
                     different cluster slots. Use a complete hash tag such as `orders:{{42}}`, or no braces"
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
    fn plain_names_get_braces_around_the_whole_name() {
        let k = LockKeys::new("orders:42").unwrap();
        assert_eq!(k.lock, "orders:42");
        assert_eq!(k.channel, "redisson_lock__channel:{orders:42}");
        assert_eq!(k.token, "redisson_lock_token:{orders:42}");
    }

    #[test]
    fn names_with_a_tag_keep_it() {
        let k = LockKeys::new("orders:{42}:a").unwrap();
        assert_eq!(k.channel, "redisson_lock__channel:orders:{42}:a");
    }

    #[test]
    fn broken_tags_and_empty_names_are_rejected() {
        for bad in ["", "a{b", "a{}b", "{}", "x}{"] {
            assert!(
                matches!(
                    LockKeys::new(bad),
                    Err(Error::InvalidArgument { name: "name", .. })
                ),
                "{bad:?}"
            );
        }
    }
}
