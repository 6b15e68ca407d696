//! Who holds a lock, in words a person knows: a client given a name
//! ([`ClientBuilder::client_name`](crate::ClientBuilder::client_name)) names its command
//! connections `relock:<client id>:<name>:<host>:<pid>` (`CLIENT SETNAME`, sent again after
//! every reconnect), and [`Lock::describe_owner`](crate::Lock::describe_owner) finds the
//! connection of an owner field's client in `CLIENT LIST`. The owner field that Redisson reads is not changed.

use fred::interfaces::{ClientLike, ClusterInterface, EventInterface};
use fred::types::{ClusterHash, CustomCommand, Value};
use tokio::sync::watch;

use crate::client::inner;
use crate::error::{Error, Result};

/// Who a lock's owner field belongs to, as its client named itself on the server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OwnerInfo {
    /// The name its client was given ([`ClientBuilder::client_name`](crate::ClientBuilder::client_name)).
    pub name: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// Its connection's address as the server sees it (`ip:port`).
    pub addr: String,
}

/// Whether `name` may name a client: 1 to 64 of `A-Z a-z 0-9 . _ -`.
pub(crate) fn validate(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "client_name",
            format!(
                "`{}`: use 1 to 64 letters, digits, `.`, `_` or `-` (it names the client's connections on the server)",
                crate::error::short(name)
            ),
        ))
    }
}

/// This host's name, as a connection name may carry it.
fn host() -> String {
    let raw = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .unwrap_or_else(|| "unknown".into());
    raw.trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect()
}

/// The connection name of a client `client_id` named `name`.
pub(crate) fn connection_name(client_id: &str, name: &str) -> String {
    format!(
        "relock:{client_id}:{name}:{}:{}",
        host(),
        std::process::id()
    )
}

fn setname() -> CustomCommand {
    CustomCommand::new_static("CLIENT SETNAME", ClusterHash::Random, false)
}

/// Names every connection of `pool` now, and each again after it reconnects, until shutdown.
/// A refusal (an ACL without `client|setname`) is logged once per connection, not retried.
pub(crate) async fn name_connections(
    pool: &fred::clients::Pool,
    name: String,
    shutdown: watch::Receiver<bool>,
) {
    for c in pool.clients() {
        let (client, name, mut shutdown) = (c.clone(), name.clone(), shutdown.clone());
        let mut reconnects = client.reconnect_rx();
        send_name(&client, &name).await;
        tokio::spawn(async move {
            loop {
                let reconnected = tokio::select! {
                    r = reconnects.recv() => !matches!(
                        r,
                        Err(tokio::sync::broadcast::error::RecvError::Closed)
                    ),
                    _ = shutdown.wait_for(|s| *s) => false,
                };
                if !reconnected {
                    return;
                }
                send_name(&client, &name).await;
            }
        });
    }
}

async fn send_name(client: &fred::clients::Client, name: &str) {
    // On a Cluster, every node this client talks to; elsewhere, its one connection.
    let nodes = client
        .cached_cluster_state()
        .map(|s| s.unique_primary_nodes())
        .unwrap_or_default();
    let sent: std::result::Result<(), fred::error::Error> = if nodes.is_empty() {
        client.custom(setname(), vec![name.to_string()]).await
    } else {
        let mut sent = Ok(());
        for node in nodes {
            let on_node = client.with_cluster_node(node);
            sent = on_node.custom(setname(), vec![name.to_string()]).await;
            if sent.is_err() {
                break;
            }
        }
        sent
    };
    if let Err(e) = sent {
        tracing::warn!(error = %e, "the client's name could not be set on a connection (CLIENT SETNAME); relock status will show its owner field only");
    }
}

/// The fields of one `CLIENT LIST` line.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
}

/// The owner of `field` in `list` (a `CLIENT LIST` reply), if its client named itself.
pub(crate) fn find(list: &str, field_of_owner: &str) -> Option<OwnerInfo> {
    let owner = field_of_owner
        .strip_suffix(":write")
        .unwrap_or(field_of_owner);
    let (client_id, _) = owner.rsplit_once(':')?;
    let prefix = format!("relock:{client_id}:");
    list.lines().find_map(|line| {
        let name = field(line, "name")?.strip_prefix(&prefix)?;
        let mut parts = name.rsplitn(3, ':');
        let pid = parts.next()?.parse().ok()?;
        let host = parts.next()?.to_string();
        let name = parts.next()?.to_string();
        Some(OwnerInfo {
            name,
            host,
            pid,
            addr: field(line, "addr").unwrap_or("").to_string(),
        })
    })
}

/// The owner of `field` on the lock `lock` (its key), from the server that holds the key.
pub(crate) async fn describe(
    inner: &inner::Inner,
    lock: &str,
    field: &str,
) -> Result<Option<OwnerInfo>> {
    let slot = fred::util::redis_keyslot(lock.as_bytes());
    let list = CustomCommand::new_static("CLIENT LIST", ClusterHash::Custom(slot), false);
    let reply: Value = inner
        .pool
        .next()
        .custom(list, Vec::<String>::new())
        .await
        .map_err(|e| inner.error("client list", lock, e))?;
    let text = reply.as_string().unwrap_or_default();
    Ok(find(&text, field))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_found_by_its_clients_connection_name() {
        let list =
            "id=3 addr=10.0.0.5:51234 laddr=x fd=8 name=relock:c1d2:billing:web-3:4242 age=1\n\
                    id=4 addr=10.0.0.6:1 fd=9 name= age=2\n";
        let got = find(list, "c1d2:3600827011076526686").unwrap();
        assert_eq!(
            (
                got.name.as_str(),
                got.host.as_str(),
                got.pid,
                got.addr.as_str()
            ),
            ("billing", "web-3", 4242, "10.0.0.5:51234")
        );
        assert_eq!(find(list, "c1d2:77:write").unwrap().pid, 4242);
        assert!(find(list, "other:1").is_none());
        assert!(validate("billing-worker.2").is_ok());
        assert!(validate("has space").is_err() && validate("").is_err());
    }
}
