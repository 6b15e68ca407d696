//! `FaultProxy` against a real redis-server: every mode, reset, refuse and drop.

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use relock_testkit::{wait_until, Direction, FaultProxy, Mode, RedisServer, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";
/// Generous bound for things that should happen promptly.
const SOON: Duration = Duration::from_secs(2);
/// The window in which we prove that something did NOT happen.
const QUIET: Duration = Duration::from_millis(300);

fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

fn setup() -> (RedisServer, FaultProxy) {
    let server = RedisServer::start().expect("start redis-server");
    let proxy = FaultProxy::start(&server.addr()).expect("start proxy");
    (server, proxy)
}

fn get(server: &RedisServer, key: &str) -> Option<String> {
    match server.cmd(&["GET", key]).expect("GET on the server") {
        Value::Bulk(None) => None,
        v => v.as_string(),
    }
}

/// A RESP client over a tokio socket that reads single-line replies.
struct Client {
    stream: tokio::net::TcpStream,
    buf: Vec<u8>,
}

impl Client {
    async fn connect(addr: &str) -> Client {
        let stream = tokio::time::timeout(SOON, tokio::net::TcpStream::connect(addr))
            .await
            .expect("connect timed out")
            .expect("connect");
        stream.set_nodelay(true).unwrap();
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    /// One reply line (with `\r\n`); `Ok(None)` if none arrived within `within`; an error for
    /// EOF or a reset.
    async fn reply(&mut self, within: Duration) -> std::io::Result<Option<String>> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line: Vec<u8> = self.buf.drain(..end + 2).collect();
                return Ok(Some(String::from_utf8(line).unwrap()));
            }
            let mut chunk = [0u8; 512];
            match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Err(_) => return Ok(None),
                Ok(Ok(0)) => return Err(ErrorKind::UnexpectedEof.into()),
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
                Ok(Err(e)) => return Err(e),
            }
        }
    }

    async fn expect_reply(&mut self, expected: &str) {
        let got = self.reply(SOON).await.expect("reading a reply");
        assert_eq!(got.as_deref(), Some(expected));
    }

    /// Sends PING and returns how long PONG took.
    async fn ping(&mut self) -> Duration {
        let start = Instant::now();
        self.send(PING).await;
        self.expect_reply("+PONG\r\n").await;
        start.elapsed()
    }
}

fn is_disconnect(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::UnexpectedEof
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
    )
}

// 1. Pass, from plain sync code with std sockets.
#[test]
fn pass_forwards_ping_from_sync_code() {
    let (_server, proxy) = setup();
    assert_eq!(proxy.url(), format!("redis://127.0.0.1:{}", proxy.port()));
    let mut stream = std::net::TcpStream::connect(proxy.addr()).unwrap();
    stream.set_read_timeout(Some(SOON)).unwrap();
    stream.write_all(PING).unwrap();
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+PONG\r\n");
    assert_eq!(proxy.bytes(Direction::Up), PING.len() as u64);
    assert_eq!(proxy.bytes(Direction::Down), 7);
    assert_eq!(proxy.accepted(), 1);
    assert_eq!(proxy.connections(), 1);
}

// 1b. Pass under a multi-thread runtime; a client that closes is no longer counted as open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pass_counts_connections() {
    let (_server, proxy) = setup();
    let mut a = Client::connect(&proxy.addr()).await;
    let mut b = Client::connect(&proxy.addr()).await;
    a.ping().await;
    b.ping().await;
    assert_eq!(proxy.accepted(), 2);
    assert_eq!(proxy.connections(), 2);
    drop(a);
    wait_until(SOON, "the closed connection to be gone", || async {
        proxy.connections() == 1
    })
    .await
    .unwrap();
    b.ping().await;
}

// 2. Delay up: PING takes at least the delay; fast again after Pass.
#[tokio::test]
async fn delay_up_slows_commands() {
    let (_server, proxy) = setup();
    let mut c = Client::connect(&proxy.addr()).await;
    c.ping().await;
    proxy.set(Direction::Up, Mode::Delay(Duration::from_millis(200)));
    assert_eq!(
        proxy.mode(Direction::Up),
        Mode::Delay(Duration::from_millis(200))
    );
    let slow = c.ping().await;
    assert!(
        slow >= Duration::from_millis(200) && slow < Duration::from_millis(1500),
        "{slow:?}"
    );
    proxy.set(Direction::Up, Mode::Pass);
    let fast = c.ping().await;
    assert!(fast < Duration::from_millis(150), "{fast:?}");
}

// 2b. Shortening the delay does not let a later chunk overtake an earlier one.
#[tokio::test]
async fn changing_delay_keeps_order() {
    let (server, proxy) = setup();
    let mut c = Client::connect(&proxy.addr()).await;
    proxy.set(Direction::Up, Mode::Delay(Duration::from_millis(800)));
    c.send(&resp(&["SET", "k", "first"])).await;
    // Let the proxy read the first command as its own chunk.
    tokio::time::sleep(Duration::from_millis(50)).await;
    proxy.set(Direction::Up, Mode::Delay(Duration::from_millis(10)));
    c.send(&resp(&["SET", "k", "second"])).await;
    c.expect_reply("+OK\r\n").await;
    c.expect_reply("+OK\r\n").await;
    assert_eq!(get(&server, "k").as_deref(), Some("second"));
}

// 3. Freeze down: the server executes, the reply is held until heal.
#[tokio::test]
async fn freeze_down_holds_replies_until_heal() {
    let (server, proxy) = setup();
    let mut c = Client::connect(&proxy.addr()).await;
    proxy.set(Direction::Down, Mode::Freeze);
    c.send(&resp(&["SET", "k", "v"])).await;
    wait_until(SOON, "SET to run on the server", || async {
        get(&server, "k").as_deref() == Some("v")
    })
    .await
    .unwrap();
    assert_eq!(c.reply(QUIET).await.unwrap(), None, "a reply got through");
    assert_eq!(proxy.bytes(Direction::Down), 0);
    assert_eq!(proxy.held(Direction::Down), 5);
    proxy.heal();
    c.expect_reply("+OK\r\n").await;
    assert_eq!(proxy.bytes(Direction::Down), 5);
    assert_eq!(proxy.held(Direction::Down), 0);
}

// 4. Freeze up: the command does not reach the server until heal.
#[tokio::test]
async fn freeze_up_holds_commands_until_heal() {
    let (server, proxy) = setup();
    let mut c = Client::connect(&proxy.addr()).await;
    c.ping().await;
    proxy.set(Direction::Up, Mode::Freeze);
    c.send(&resp(&["SET", "k", "v"])).await;
    tokio::time::sleep(QUIET).await; // proving a negative: nothing may happen in this window
    assert_eq!(get(&server, "k"), None, "the frozen command ran");
    assert_eq!(proxy.bytes(Direction::Up), PING.len() as u64);
    let set_len = resp(&["SET", "k", "v"]).len() as u64;
    assert_eq!(proxy.held(Direction::Up), set_len);
    proxy.heal();
    wait_until(SOON, "the held SET to run", || async {
        get(&server, "k").as_deref() == Some("v")
    })
    .await
    .unwrap();
    c.expect_reply("+OK\r\n").await;
}

// 5. Blackhole down: the command runs, its reply is gone for good.
#[tokio::test]
async fn blackhole_down_discards_replies() {
    let (server, proxy) = setup();
    let mut c = Client::connect(&proxy.addr()).await;
    proxy.set(Direction::Down, Mode::Blackhole);
    c.send(&resp(&["SET", "k", "v"])).await;
    wait_until(SOON, "SET to run on the server", || async {
        get(&server, "k").as_deref() == Some("v")
    })
    .await
    .unwrap();
    assert_eq!(c.reply(QUIET).await.unwrap(), None, "a reply got through");
    proxy.set(Direction::Down, Mode::Pass);
    // The discarded +OK must not show up ahead of PONG.
    c.ping().await;
    assert_eq!(proxy.bytes(Direction::Down), 7);
}

// 5b. Blackhole after Freeze drops what was held.
#[tokio::test]
async fn blackhole_drops_frozen_bytes() {
    let (server, proxy) = setup();
    let mut c = Client::connect(&proxy.addr()).await;
    proxy.set(Direction::Down, Mode::Freeze);
    c.send(&resp(&["SET", "k", "v"])).await;
    wait_until(SOON, "the proxy to hold the +OK", || async {
        proxy.held(Direction::Down) == 5
    })
    .await
    .unwrap();
    assert_eq!(get(&server, "k").as_deref(), Some("v"));
    // Even a blackhole that ends at once drops what was held.
    proxy.set(Direction::Down, Mode::Blackhole);
    proxy.set(Direction::Down, Mode::Pass);
    c.ping().await;
    assert_eq!(proxy.held(Direction::Down), 0);
    assert_eq!(proxy.bytes(Direction::Down), 7);
}

// 6. reset: the open connection dies on both sides; new connections work.
#[tokio::test]
async fn reset_kills_open_connections() {
    let (server, proxy) = setup();
    let clients_on_server = || async {
        let list = server
            .cmd(&["CLIENT", "LIST"])
            .unwrap()
            .as_string()
            .unwrap();
        list.lines().count() // includes the connection asking
    };
    let mut c = Client::connect(&proxy.addr()).await;
    c.ping().await;
    assert_eq!(clients_on_server().await, 2);
    proxy.set(Direction::Down, Mode::Freeze);
    c.send(PING).await; // its frozen reply must be discarded, not delivered later
    wait_until(SOON, "the proxy to hold the PONG", || async {
        proxy.held(Direction::Down) == 7
    })
    .await
    .unwrap();
    proxy.reset();
    assert_eq!(proxy.connections(), 0);
    assert_eq!(proxy.held(Direction::Down), 0);
    // SO_LINGER 0: a reset, not a clean EOF.
    let after = c.reply(SOON).await;
    assert!(
        matches!(&after, Err(e) if e.kind() == ErrorKind::ConnectionReset),
        "expected a connection reset, got {after:?}"
    );
    wait_until(
        SOON,
        "the server to drop the proxied connection",
        || async { clients_on_server().await == 1 },
    )
    .await
    .unwrap();
    proxy.heal();
    let mut fresh = Client::connect(&proxy.addr()).await;
    fresh.ping().await;
    assert_eq!(proxy.accepted(), 2);
    assert_eq!(proxy.connections(), 1);
}

// 7. refuse: new connections read EOF at once; refuse(false) restores service.
#[tokio::test]
async fn refuse_closes_new_connections() {
    let (_server, proxy) = setup();
    let mut open = Client::connect(&proxy.addr()).await;
    open.ping().await;
    proxy.refuse(true);
    let mut c = Client::connect(&proxy.addr()).await;
    let started = Instant::now();
    let got = c.reply(SOON).await;
    assert!(
        matches!(&got, Err(e) if e.kind() == ErrorKind::UnexpectedEof),
        "expected EOF, got {got:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(proxy.accepted(), 2);
    assert_eq!(proxy.connections(), 1);
    open.ping().await; // open connections are left alone
    proxy.refuse(false);
    let mut c = Client::connect(&proxy.addr()).await;
    c.ping().await;
}

// 8. Dropping the proxy while frozen is prompt and closes the port and the connections.
#[tokio::test]
async fn drop_while_frozen_is_prompt() {
    let (_server, proxy) = setup();
    let addr = proxy.addr();
    let mut c = Client::connect(&addr).await;
    proxy.set_both(Mode::Freeze);
    c.send(PING).await;
    wait_until(SOON, "the proxy to hold the PING", || async {
        proxy.held(Direction::Up) == PING.len() as u64
    })
    .await
    .unwrap();
    let port = proxy.port();
    #[cfg(target_os = "linux")]
    assert!(proxy_thread_alive(port));
    let started = Instant::now();
    drop(proxy);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    #[cfg(target_os = "linux")]
    assert!(
        !proxy_thread_alive(port),
        "the proxy thread outlived the proxy"
    );
    // A redis-server being spawned by a concurrent test can hold a copy of the listener's file
    // descriptor between its fork and exec, so allow the port a moment to close.
    wait_until(
        Duration::from_secs(1),
        "the proxy port to close",
        || async { std::net::TcpStream::connect(&addr).is_err() },
    )
    .await
    .unwrap();
    let got = c.reply(SOON).await;
    assert!(
        matches!(&got, Err(e) if is_disconnect(e)),
        "expected EOF or reset, got {got:?}"
    );
}

/// Whether this process has a thread named like the proxy thread for `port`.
#[cfg(target_os = "linux")]
fn proxy_thread_alive(port: u16) -> bool {
    let name = format!("fproxy-{port}");
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .any(|comm| comm.trim_end() == name)
}

// The upstream is down: clients are cut off at once, and nothing stays open.
#[tokio::test]
async fn dead_upstream_cuts_clients_off() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let proxy = FaultProxy::start(&format!("127.0.0.1:{port}")).unwrap();
    // The reset can arrive so fast that connect itself reports it.
    let got = match tokio::net::TcpStream::connect(proxy.addr()).await {
        Ok(stream) => {
            let mut c = Client {
                stream,
                buf: Vec::new(),
            };
            c.reply(SOON).await
        }
        Err(e) => Err(e),
    };
    assert!(
        matches!(&got, Err(e) if is_disconnect(e)),
        "expected EOF or reset, got {got:?}"
    );
    assert_eq!(proxy.accepted(), 1);
    assert_eq!(proxy.connections(), 0);
}

// 9. Per connection: freeze the connections open now; new ones pass; release one by id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freeze_existing_holds_old_connections_while_new_ones_pass() {
    let (server, proxy) = setup();
    let mut old = Client::connect(&proxy.addr()).await;
    old.ping().await;
    let frozen = proxy.freeze_existing(Direction::Up);
    assert_eq!(frozen, proxy.conns());
    assert_eq!(frozen.len(), 1);
    let id = frozen[0];
    assert_eq!(id.get(), 1);
    assert_eq!(proxy.conn_mode(id, Direction::Up), Some(Mode::Freeze));
    assert_eq!(proxy.conn_mode(id, Direction::Down), None);
    assert_eq!(proxy.mode(Direction::Up), Mode::Pass);
    let set = resp(&["SET", "k", "old"]);
    old.send(&set).await;
    wait_until(SOON, "the old connection to hold the SET", || async {
        proxy.conn_held(id, Direction::Up) == set.len() as u64
    })
    .await
    .unwrap();
    assert_eq!(proxy.conns_holding(Direction::Up), vec![id]);
    // A connection opened now follows the proxy-wide mode (Pass).
    let mut new = Client::connect(&proxy.addr()).await;
    new.ping().await;
    new.send(&resp(&["SET", "k", "new"])).await;
    new.expect_reply("+OK\r\n").await;
    let ids = proxy.conns();
    assert_eq!(ids.len(), 2);
    let new_id = ids[1];
    assert!(new_id > id);
    assert_eq!(proxy.conn_held(new_id, Direction::Up), 0);
    assert!(proxy.conn_bytes(new_id, Direction::Up) > 0);
    assert_eq!(proxy.conn_bytes(id, Direction::Up), PING.len() as u64);
    tokio::time::sleep(QUIET).await; // proving a negative: the frozen SET stays held
    assert_eq!(get(&server, "k").as_deref(), Some("new"));
    assert_eq!(old.reply(Duration::ZERO).await.unwrap(), None);
    // Clearing the override delivers the held command, after the newer one: it lands late.
    assert!(proxy.set_conn(id, Direction::Up, None));
    old.expect_reply("+OK\r\n").await;
    assert_eq!(get(&server, "k").as_deref(), Some("old"));
    assert_eq!(proxy.conn_held(id, Direction::Up), 0);
    assert_eq!(proxy.held(Direction::Up), 0);
    assert_eq!(
        proxy.conn_bytes(id, Direction::Up),
        (PING.len() + set.len()) as u64
    );
}

// 10. An override beats the proxy-wide mode both ways; clear_overrides goes back to it.
#[tokio::test]
async fn a_connection_override_beats_the_proxy_wide_mode() {
    let (_server, proxy) = setup();
    let mut a = Client::connect(&proxy.addr()).await;
    let mut b = Client::connect(&proxy.addr()).await;
    a.ping().await;
    b.ping().await;
    let [ida, idb] = proxy.conns()[..] else {
        panic!("two connections expected: {:?}", proxy.conns())
    };
    // Proxy-wide freeze, but `a` passes.
    proxy.set(Direction::Down, Mode::Freeze);
    assert!(proxy.set_conn(ida, Direction::Down, Some(Mode::Pass)));
    a.ping().await;
    b.send(PING).await;
    wait_until(SOON, "b's PONG to be held", || async {
        proxy.conn_held(idb, Direction::Down) == 7
    })
    .await
    .unwrap();
    assert_eq!(proxy.conn_held(ida, Direction::Down), 0);
    // A proxy-wide change does not move a connection that has an override.
    proxy.set(Direction::Down, Mode::Delay(Duration::from_millis(1)));
    b.expect_reply("+PONG\r\n").await;
    proxy.set(Direction::Down, Mode::Freeze);
    a.ping().await;
    // Back to the proxy-wide mode (Freeze) for `a` too; then everything passes again.
    proxy.clear_overrides();
    assert_eq!(proxy.conn_mode(ida, Direction::Down), None);
    a.send(PING).await;
    assert_eq!(a.reply(QUIET).await.unwrap(), None, "a is not frozen");
    proxy.heal();
    a.expect_reply("+PONG\r\n").await;
    // Unknown or closed connections are reported as such.
    drop(b);
    wait_until(SOON, "b to close", || async { proxy.conns() == vec![ida] })
        .await
        .unwrap();
    assert!(!proxy.set_conn(idb, Direction::Up, Some(Mode::Freeze)));
    assert_eq!(proxy.conn_held(idb, Direction::Up), 0);
    assert!(!proxy.reset_conn(idb));
}

// 11. A per-connection blackhole drops only that connection's held bytes; reset_conn resets
//     one connection and leaves the others alone.
#[tokio::test]
async fn blackhole_and_reset_of_one_connection_leave_the_others_alone() {
    let (server, proxy) = setup();
    let mut a = Client::connect(&proxy.addr()).await;
    let mut b = Client::connect(&proxy.addr()).await;
    a.ping().await;
    b.ping().await;
    let [ida, idb] = proxy.conns()[..] else {
        panic!("two connections expected: {:?}", proxy.conns())
    };
    assert_eq!(proxy.freeze_existing(Direction::Down), vec![ida, idb]);
    a.send(PING).await;
    b.send(PING).await;
    wait_until(SOON, "both PONGs to be held", || async {
        proxy.held(Direction::Down) == 14
    })
    .await
    .unwrap();
    // Blackhole then Pass at once on `a`: its held PONG is dropped, b's is not.
    proxy.set_conn(ida, Direction::Down, Some(Mode::Blackhole));
    proxy.set_conn(ida, Direction::Down, Some(Mode::Pass));
    a.ping().await; // the dropped PONG does not show up first
    assert_eq!(proxy.conn_held(idb, Direction::Down), 7);
    // A proxy-wide blackhole reaches only connections without an override.
    proxy.set(Direction::Down, Mode::Blackhole);
    proxy.set(Direction::Down, Mode::Pass);
    assert_eq!(proxy.conn_held(idb, Direction::Down), 7);
    proxy.set_conn(idb, Direction::Down, None);
    b.expect_reply("+PONG\r\n").await;
    // Reset one connection: it gets a reset, the other keeps working.
    assert!(proxy.reset_conn(ida));
    assert_eq!(proxy.conns(), vec![idb]);
    assert_eq!(proxy.connections(), 1);
    let after = a.reply(SOON).await;
    assert!(
        matches!(&after, Err(e) if e.kind() == ErrorKind::ConnectionReset),
        "expected a connection reset, got {after:?}"
    );
    b.ping().await;
    b.send(&resp(&["SET", "k", "v"])).await;
    b.expect_reply("+OK\r\n").await;
    assert_eq!(get(&server, "k").as_deref(), Some("v"));
}

#[test]
fn bad_upstream_is_an_error() {
    let err = FaultProxy::start("not an address").unwrap_err();
    assert!(err.to_string().contains("not an address"), "{err}");
}
