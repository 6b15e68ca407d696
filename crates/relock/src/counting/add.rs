//! The add script both semaphores send (a counting semaphore's release, a permit semaphore's
//! `add_permits`): it adds to the count and publishes the new one; and how its reply reads.

use crate::client::inner::Inner;
use crate::client::scripts;
use crate::counting::counts::unexpected;
use crate::counting::names::Names;
use crate::error::{Error, Result};

scripts::scripts! {
    /// Semaphore: add n permits (a release) and publish the new count.
    SEMAPHORE_ADD = writes "semaphore_add.lua" [];
}

/// `semaphore_add.lua`: adds `n` (may be negative) and publishes the new count if above 0.
/// Returns the new count, or `InvalidArgument` if it would go above `MAX_COUNT`.
pub(crate) async fn add(inner: &Inner, names: &Names, n: i64) -> Result<i64> {
    let reply: Vec<i64> = names
        .run_publishing(
            inner,
            (&SEMAPHORE_ADD, "semaphore add"),
            &[],
            vec![n.to_string()],
            true,
        )
        .await?;
    match read_add(&reply) {
        Some(Ok(available)) => Ok(available),
        Some(Err(available)) => Err(Error::invalid(
            "n",
            format!(
                "adding {n} to the {available} available permits of `{}` would exceed the 10^15 supported; add fewer",
                names.key
            ),
        )),
        None => Err(unexpected("semaphore add", inner, &reply)),
    }
}

/// Reads `semaphore_add.lua`'s reply: `Ok` with the new count (`[1, available]`), or `Err` with
/// the count as it is when adding would exceed 10^15 (`[0, available]`); `None` for a shape
/// it never sends.
pub(crate) fn read_add(reply: &[i64]) -> Option<std::result::Result<i64, i64>> {
    match *reply {
        [1, available] => Some(Ok(available)),
        [0, available] => Some(Err(available)),
        _ => None,
    }
}
