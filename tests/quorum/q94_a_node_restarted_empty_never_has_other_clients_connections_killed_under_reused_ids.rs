//! Before a node's new set of connections votes, the ids its replaced set had on the server
//! are killed (`CLIENT KILL ID`). After the server restarted empty, those ids name nothing of
//! ours any more: the server counts client ids from 1 again, so they may now be other
//! clients' connections. A restart has already dropped every old connection, so there is
//! nothing to kill; another application's connection under a reused id must be left alone.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use relock_tests::*;

/// A plain connection of another application, and its id on the server.
fn victim(addr: &str) -> (i64, BufReader<TcpStream>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    s.write_all(b"CLIENT ID\r\n").unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let id = line.trim().trim_start_matches(':').parse().unwrap();
    (id, r)
}

fn alive(r: &mut BufReader<TcpStream>) -> bool {
    if r.get_mut().write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut line = String::new();
    matches!(r.read_line(&mut line), Ok(n) if n > 0 && line.starts_with("+PONG"))
}

#[tokio::test]
async fn a_node_restarted_empty_never_has_other_clients_connections_killed_under_reused_ids() {
    let m = masters(3);
    let (proxy, urls) = urls_with_proxy(&m, 0);
    let client = quorum_builder(urls, Duration::from_millis(200))
        .build()
        .await
        .unwrap();
    // The client's connections' ids on node 1 (everything but the one asking).
    let list = m[0].cmd(&["CLIENT", "LIST"]).unwrap().as_string().unwrap();
    let ours: Vec<i64> = list
        .lines()
        .filter(|l| !l.contains("cmd=client|list"))
        .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")))
        .filter_map(|v| v.parse().ok())
        .collect();
    assert!(!ours.is_empty(), "{list}");
    let highest = *ours.iter().max().unwrap();

    // Node 1 restarts empty; the client cannot reconnect until other clients have connected.
    proxy.refuse(true);
    m[0].restart_empty().unwrap();
    let mut victims = Vec::new();
    loop {
        let (id, r) = victim(&m[0].addr());
        victims.push((id, r));
        if id > highest + 2 {
            break;
        }
    }
    let reused: Vec<i64> = victims
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| ours.contains(id))
        .collect();
    assert!(
        !reused.is_empty(),
        "ours {ours:?}; victims' ids do not overlap"
    );
    proxy.refuse(false);

    // The client's new set connects and is checked; give it time to vote again.
    let node_1 = &m[0];
    eventually(Duration::from_secs(10), "node 1 votes again", || {
        let l = client.lock("q94:probe");
        async move {
            let g = l.try_lock().await.ok().flatten()?;
            let on_node_1 = node_1.cmd(&["EXISTS", "q94:probe"]).ok()?.as_int() == Some(1);
            g.unlock().await.ok()?;
            on_node_1.then_some(())
        }
    })
    .await;
    let killed: Vec<i64> = victims
        .iter_mut()
        .filter_map(|(id, r)| (!alive(r)).then_some(*id))
        .collect();
    client.shutdown().await;
    assert!(
        killed.is_empty(),
        "other clients' connections killed on the restarted node: ids {killed:?} (the client's replaced set had {ours:?})"
    );
}
