//! A TCP fault proxy between a client and one server on loopback: delay, freeze, blackhole, reset.
//!
//! Tests point a client at [`FaultProxy::url`] instead of the server's and switch each
//! [`Direction`] between the [`Mode`]s while it runs; [`FaultProxy`] has the exact semantics.
//! The proxy has its own thread and Tokio runtime, so sync tests and both runtime flavours work.
//!
//! ```no_run
//! # fn main() -> Result<(), relock_testkit::Error> {
//! use relock_testkit::{Direction, FaultProxy, Mode, RedisServer};
//! use std::time::Duration;
//!
//! let server = RedisServer::start()?;
//! let proxy = FaultProxy::start(&server.addr())?;
//! // Point the client under test at `proxy.url()` instead of `server.url()`.
//! proxy.set(Direction::Up, Mode::Delay(Duration::from_millis(200)));
//! proxy.set(Direction::Down, Mode::Freeze); // the server runs commands, replies are held
//! proxy.heal();                             // both Pass: the held replies are delivered
//! proxy.reset();                            // every open connection gets a TCP reset
//! proxy.refuse(true);                       // new connections are closed at once
//!
//! // One connection at a time: hold what is in flight on the connections open now (say, a
//! // command the client already sent), while connections opened later pass.
//! let frozen = proxy.freeze_existing(Direction::Up);
//! proxy.set_conn(frozen[0], Direction::Up, None); // back to the proxy-wide mode
//! proxy.clear_overrides();                        // every connection back to it
//! # Ok(()) }
//! ```
//!
//! # Why our own proxy rather than noxious
//! [`noxious`](https://crates.io/crates/noxious) 1.0.4 is a Rust port of Toxiproxy with
//! latency (plus jitter), bandwidth, slicer, slow-close, limit-data and timeout toxics. Its
//! supported control path is the Toxiproxy HTTP API (a separate server, driven from Rust with
//! `noxious-client` over reqwest/hyper); the in-process runner and toxic events of the core crate
//! are `#[doc(hidden)]`, and it brings its own dependency tree (tokio-util 0.6, futures, rand,
//! serde, bmrng, mockall_double). None of its toxics holds bytes and delivers them later: its
//! timeout toxic discards them. What relock's tests need is exactly that (let the server execute
//! a command while its reply is held, then release or drop it), per direction, switched
//! in-process from the test, deterministically (no jitter, no toxicity dice). This proxy
//! does that in a few hundred lines on the Tokio we already use, with no new dependencies.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc as std_mpsc, Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;

use crate::{Error, Result};

/// How long the proxy waits for the upstream to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `start`, `reset` and `drop` wait for the proxy thread.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);
/// Back-off after a failed `accept` (e.g. out of file descriptors), so it is not a busy loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(20);
/// Size of one read.
const CHUNK: usize = 16 * 1024;

/// Which way bytes flow through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client → server (commands).
    Up,
    /// Server → client (replies).
    Down,
}

/// What the proxy does with the bytes of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Forward at once.
    #[default]
    Pass,
    /// Deliver every chunk this long after it was read; order is kept, also when the delay
    /// changes.
    Delay(Duration),
    /// Read and hold the bytes; deliver them, in order, when the mode becomes `Pass` or `Delay`.
    Freeze,
    /// Read and silently discard, including bytes that were held.
    Blackhole,
}

/// One proxied connection, numbered in the order the proxy accepted them (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(u64);

impl ConnId {
    /// The number: 1 for the first connection the proxy accepted, and so on.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for ConnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "conn#{}", self.0)
    }
}

/// A fault-injecting TCP proxy in front of one upstream address.
///
/// It listens on a free port of `127.0.0.1` and forwards each accepted connection over an
/// upstream connection of its own. Each [`Direction`] has a [`Mode`], changeable at any time and
/// applying to all current and future connections. One connection can override that mode per
/// direction ([`FaultProxy::set_conn`], [`FaultProxy::freeze_existing`]): a relock client has
/// a pool of connections to one URL, and "the command already written to this connection lands
/// late while commands on other or new connections pass" needs connection-level faults. It runs on its own thread with its own
/// Tokio runtime, so it works from sync tests and under either runtime flavour. Dropping it
/// stops the thread and resets every connection, also while frozen.
///
/// # Semantics in detail
/// - A chunk is what one `read` returned. The mode when a chunk is *read* decides whether it is
///   discarded ([`Mode::Blackhole`]); the mode while it waits to be *written* decides when it
///   goes out: [`Mode::Pass`] at once, [`Mode::Delay`] once `d` has passed since it was read,
///   [`Mode::Freeze`] not until the mode changes, [`Mode::Blackhole`] never: setting
///   `Blackhole` drops every chunk not yet released, even if the mode is changed again at once.
///   Chunks leave strictly in the order they were read, whatever the modes do.
/// - Releasing held bytes happens on the proxy thread shortly after [`FaultProxy::set`]; a
///   `Pass` immediately followed by `Freeze` may release nothing. Wait for the effect (the
///   reply, or [`FaultProxy::bytes`]) before freezing again.
/// - Held bytes are kept in memory without a bound; tests send little.
/// - An end of stream (FIN) is forwarded after the bytes before it, and obeys the mode the same
///   way. A read or write error on either side resets both sides of that connection.
/// - [`FaultProxy::bytes`] counts bytes released to the receiving side (counted just before
///   they are written), not discarded ones; [`FaultProxy::held`] counts bytes read and not yet
///   released, so a test can wait until, say, a reply is being held.
///
/// # Per-connection modes
/// Each open connection has an [`ConnId`] ([`FaultProxy::conns`]) and, per direction, an
/// optional override. Its *effective* mode is the override if set, else the proxy-wide mode;
/// everything above applies to the effective mode (so a connection whose override is
/// [`Mode::Freeze`] keeps its bytes while the proxy-wide mode is `Pass`, and delivers them in
/// order when the override is cleared). A chunk is dropped if the effective mode of its
/// connection became [`Mode::Blackhole`] while it waited, through either setting. New
/// connections start without overrides. [`FaultProxy::conn_held`] and
/// [`FaultProxy::conn_bytes`] count per connection what `held` and `bytes` count overall.
#[derive(Debug)]
pub struct FaultProxy {
    port: u16,
    upstream: SocketAddr,
    shared: Arc<Shared>,
    control: mpsc::UnboundedSender<Control>,
    thread: Option<JoinHandle<()>>,
    /// Receives `()` when the thread has dropped its runtime (listener and sockets closed).
    finished: std_mpsc::Receiver<()>,
}

/// State shared between the test's handle and the proxy thread.
#[derive(Debug)]
struct Shared {
    up: Flow,
    down: Flow,
    refuse: AtomicBool,
    accepted: AtomicU64,
    open: AtomicUsize,
    /// The modes (proxy-wide and per connection) and the open connections. Every mode change
    /// and every (un)registration of a connection happens under this lock, so a connection's
    /// effective mode is always consistent with the settings.
    modes: Mutex<Modes>,
}

/// The proxy-wide modes and the registered (open) connections with their overrides.
#[derive(Debug, Default)]
struct Modes {
    up: DirState,
    down: DirState,
    conns: BTreeMap<u64, ConnEntry>,
}

impl Modes {
    fn global(&mut self, dir: Direction) -> &mut DirState {
        match dir {
            Direction::Up => &mut self.up,
            Direction::Down => &mut self.down,
        }
    }
}

/// An open connection in the registry: its control block and its overrides.
#[derive(Debug)]
struct ConnEntry {
    ctl: Arc<ConnCtl>,
    up: Option<Mode>,
    down: Option<Mode>,
}

impl ConnEntry {
    fn over(&mut self, dir: Direction) -> &mut Option<Mode> {
        match dir {
            Direction::Up => &mut self.up,
            Direction::Down => &mut self.down,
        }
    }

    /// Publishes `mode` as the effective mode of `dir`, if it differs from the current one; a
    /// (new) blackhole bumps the generation, so that held chunks are dropped.
    fn publish(&self, dir: Direction, mode: Mode) {
        self.ctl.flow(dir).state.send_if_modified(|s| {
            if s.mode == mode && mode != Mode::Blackhole {
                return false;
            }
            s.mode = mode;
            if mode == Mode::Blackhole {
                s.blackholes += 1;
            }
            true
        });
    }
}

/// One connection's control block: its effective modes and counters, and its task.
#[derive(Debug)]
struct ConnCtl {
    id: u64,
    up: ConnFlow,
    down: ConnFlow,
    /// Set by the accept loop right after spawning the connection's task (before it runs).
    abort: OnceLock<AbortHandle>,
}

impl ConnCtl {
    fn flow(&self, dir: Direction) -> &ConnFlow {
        match dir {
            Direction::Up => &self.up,
            Direction::Down => &self.down,
        }
    }
}

/// One direction of one connection: its effective mode and its counters.
#[derive(Debug)]
struct ConnFlow {
    state: watch::Sender<DirState>,
    forwarded: AtomicU64,
    held: AtomicU64,
}

impl ConnFlow {
    fn new(state: DirState) -> Self {
        ConnFlow {
            state: watch::channel(state).0,
            forwarded: AtomicU64::new(0),
            held: AtomicU64::new(0),
        }
    }
}

impl Shared {
    fn flow(&self, dir: Direction) -> &Flow {
        match dir {
            Direction::Up => &self.up,
            Direction::Down => &self.down,
        }
    }

    /// The mode registry; a panic while it was held cannot leave it inconsistent (every
    /// update is a single assignment), so a poisoned lock is used as is.
    fn lock_modes(&self) -> std::sync::MutexGuard<'_, Modes> {
        self.modes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a new connection with the current proxy-wide modes and no overrides.
    fn register(&self, id: u64) -> Arc<ConnCtl> {
        let mut modes = self.lock_modes();
        let ctl = Arc::new(ConnCtl {
            id,
            up: ConnFlow::new(DirState {
                mode: modes.up.mode,
                blackholes: 0,
            }),
            down: ConnFlow::new(DirState {
                mode: modes.down.mode,
                blackholes: 0,
            }),
            abort: OnceLock::new(),
        });
        modes.conns.insert(
            id,
            ConnEntry {
                ctl: ctl.clone(),
                up: None,
                down: None,
            },
        );
        ctl
    }

    fn unregister(&self, id: u64) {
        self.lock_modes().conns.remove(&id);
    }
}

/// One direction: its counters over all connections.
#[derive(Debug)]
struct Flow {
    /// Bytes released to the receiving side.
    forwarded: AtomicU64,
    /// Bytes read and queued but neither released nor dropped yet.
    held: AtomicU64,
}

impl Flow {
    fn new() -> Self {
        Flow {
            forwarded: AtomicU64::new(0),
            held: AtomicU64::new(0),
        }
    }
}

/// The (effective) mode of one direction, and how often it was set to [`Mode::Blackhole`]: a
/// chunk read before a blackhole began is dropped even if the mode moved on before the writer
/// looked (watch channels only show the latest value).
#[derive(Debug, Clone, Copy, Default)]
struct DirState {
    mode: Mode,
    blackholes: u64,
}

#[derive(Debug)]
enum Control {
    /// Reset every open connection, then acknowledge.
    Reset(std_mpsc::Sender<()>),
    Shutdown,
}

impl FaultProxy {
    /// Starts a proxy on a free port of `127.0.0.1` that forwards to `upstream`
    /// (`"127.0.0.1:port"`).
    ///
    /// Both directions start in [`Mode::Pass`]. The upstream is connected per client
    /// connection, so it need not be up yet.
    ///
    /// # Errors
    /// [`Error::Io`] if `upstream` does not resolve, or the listener, runtime or thread cannot
    /// be set up.
    pub fn start(upstream: &str) -> Result<Self> {
        let upstream_addr = upstream
            .to_socket_addrs()
            .map_err(|e| Error::Io {
                what: format!("resolving the fault proxy's upstream {upstream}"),
                source: e,
            })?
            .next()
            .ok_or_else(|| Error::Io {
                what: format!("resolving the fault proxy's upstream {upstream}"),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
            })?;
        let io_err = |what: String| move |e: std::io::Error| Error::Io { what, source: e };
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(io_err(format!(
            "binding a fault proxy for {upstream} on 127.0.0.1"
        )))?;
        let port = listener
            .local_addr()
            .map_err(io_err(format!(
                "reading the fault proxy's address (for {upstream})"
            )))?
            .port();
        listener.set_nonblocking(true).map_err(io_err(format!(
            "setting up the fault proxy on 127.0.0.1:{port}"
        )))?;

        let shared = Arc::new(Shared {
            up: Flow::new(),
            down: Flow::new(),
            refuse: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            open: AtomicUsize::new(0),
            modes: Mutex::new(Modes::default()),
        });
        let (control, control_rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std_mpsc::channel::<std::io::Result<()>>();
        let (finished_tx, finished) = std_mpsc::channel();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            // Short enough for Linux's 15-byte thread names, so tools (and tests) can see it.
            .name(format!("fproxy-{port}"))
            .spawn(move || {
                run_thread(listener, upstream_addr, thread_shared, control_rx, ready_tx);
                let _ = finished_tx.send(());
            })
            .map_err(io_err(format!(
                "spawning the fault proxy thread for 127.0.0.1:{port}"
            )))?;
        let proxy = FaultProxy {
            port,
            upstream: upstream_addr,
            shared,
            control,
            thread: Some(thread),
            finished,
        };
        // On error `proxy` is dropped, which stops the thread.
        match ready_rx.recv_timeout(CONTROL_TIMEOUT) {
            Ok(Ok(())) => Ok(proxy),
            Ok(Err(e)) => Err(Error::Io {
                what: format!("starting the fault proxy on 127.0.0.1:{port}"),
                source: e,
            }),
            Err(_) => Err(Error::Io {
                what: format!("starting the fault proxy on 127.0.0.1:{port}"),
                source: std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the proxy thread did not come up",
                ),
            }),
        }
    }

    /// The port the proxy listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The address connections are forwarded to.
    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// Sets the mode of one direction, for current and future connections (a connection with
    /// an override for `dir` keeps following its override).
    pub fn set(&self, dir: Direction, mode: Mode) {
        let mut modes = self.shared.lock_modes();
        let global = modes.global(dir);
        global.mode = mode;
        if mode == Mode::Blackhole {
            global.blackholes += 1;
        }
        for entry in modes.conns.values_mut() {
            if entry.over(dir).is_none() {
                entry.publish(dir, mode);
            }
        }
    }

    /// Sets the mode of both directions.
    pub fn set_both(&self, mode: Mode) {
        self.set(Direction::Up, mode);
        self.set(Direction::Down, mode);
    }

    /// The current proxy-wide mode of one direction.
    pub fn mode(&self, dir: Direction) -> Mode {
        self.shared.lock_modes().global(dir).mode
    }

    /// The connections open now (accepted and not yet closed or reset), oldest first.
    pub fn conns(&self) -> Vec<ConnId> {
        self.shared
            .lock_modes()
            .conns
            .keys()
            .map(|&id| ConnId(id))
            .collect()
    }

    /// Overrides the mode of direction `dir` for connection `id` only (`None`: follow the
    /// proxy-wide mode again). Returns `false` if that connection is no longer open.
    pub fn set_conn(&self, id: ConnId, dir: Direction, mode: Option<Mode>) -> bool {
        let mut modes = self.shared.lock_modes();
        let global = modes.global(dir).mode;
        let Some(entry) = modes.conns.get_mut(&id.0) else {
            return false;
        };
        *entry.over(dir) = mode;
        entry.publish(dir, mode.unwrap_or(global));
        true
    }

    /// The override of direction `dir` for connection `id`, if it is open and has one.
    pub fn conn_mode(&self, id: ConnId, dir: Direction) -> Option<Mode> {
        let mut modes = self.shared.lock_modes();
        modes.conns.get_mut(&id.0).and_then(|e| *e.over(dir))
    }

    /// Freezes direction `dir` of every connection open now (an override, see
    /// [`FaultProxy::set_conn`]); connections opened later follow the proxy-wide mode. Returns
    /// the connections it froze. Typical use: hold a command a pooled client is about to
    /// write, while the client's reconnects and other connections go through.
    pub fn freeze_existing(&self, dir: Direction) -> Vec<ConnId> {
        let mut modes = self.shared.lock_modes();
        let mut frozen = Vec::new();
        for (&id, entry) in modes.conns.iter_mut() {
            *entry.over(dir) = Some(Mode::Freeze);
            entry.publish(dir, Mode::Freeze);
            frozen.push(ConnId(id));
        }
        frozen
    }

    /// Removes every connection's overrides, both directions: all follow the proxy-wide modes
    /// again (held bytes are delivered if those let them).
    pub fn clear_overrides(&self) {
        let mut modes = self.shared.lock_modes();
        let (up, down) = (modes.up.mode, modes.down.mode);
        for entry in modes.conns.values_mut() {
            entry.up = None;
            entry.down = None;
            entry.publish(Direction::Up, up);
            entry.publish(Direction::Down, down);
        }
    }

    /// Bytes connection `id` currently holds back in direction `dir` (0 once it is closed).
    pub fn conn_held(&self, id: ConnId, dir: Direction) -> u64 {
        self.conn_ctl(id)
            .map_or(0, |c| c.flow(dir).held.load(Ordering::SeqCst))
    }

    /// Bytes connection `id` has forwarded in direction `dir` (0 once it is closed).
    pub fn conn_bytes(&self, id: ConnId, dir: Direction) -> u64 {
        self.conn_ctl(id)
            .map_or(0, |c| c.flow(dir).forwarded.load(Ordering::SeqCst))
    }

    /// The open connections that hold bytes back in direction `dir` now, oldest first.
    pub fn conns_holding(&self, dir: Direction) -> Vec<ConnId> {
        self.shared
            .lock_modes()
            .conns
            .values()
            .filter(|e| e.ctl.flow(dir).held.load(Ordering::SeqCst) > 0)
            .map(|e| ConnId(e.ctl.id))
            .collect()
    }

    /// Resets one connection as [`FaultProxy::reset`] resets all (both sides get a TCP reset;
    /// its held bytes are discarded). Returns once it is closed; `false` if it was not open.
    pub fn reset_conn(&self, id: ConnId) -> bool {
        let Some(ctl) = self.conn_ctl(id) else {
            return false;
        };
        if let Some(abort) = ctl.abort.get() {
            abort.abort();
        }
        // The connection unregisters itself when its task is dropped on the proxy thread.
        let deadline = std::time::Instant::now() + CONTROL_TIMEOUT;
        while self.conn_ctl(id).is_some() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    fn conn_ctl(&self, id: ConnId) -> Option<Arc<ConnCtl>> {
        self.shared
            .lock_modes()
            .conns
            .get(&id.0)
            .map(|e| e.ctl.clone())
    }

    /// Both directions back to [`Mode::Pass`]; frozen bytes are delivered.
    pub fn heal(&self) {
        self.set_both(Mode::Pass);
    }

    /// Drops every open connection abruptly: both the client and the upstream side get a TCP
    /// reset (`SO_LINGER` 0); frozen bytes are discarded. Returns once that is done.
    ///
    /// New connections are accepted as before. A connection still waiting in the listen backlog
    /// (not yet accepted by the proxy) is not affected.
    pub fn reset(&self) {
        let (ack, acked) = std_mpsc::channel();
        if self.control.send(Control::Reset(ack)).is_ok() {
            // Bounded: the proxy thread only has to abort and drop its tasks.
            let _ = acked.recv_timeout(CONTROL_TIMEOUT);
        }
    }

    /// While `true`, new connections are accepted and closed at once, as if the node were down:
    /// the client reads EOF (or gets a reset if it had already sent something). Open connections are left alone; add [`FaultProxy::reset`] for
    /// those.
    pub fn refuse(&self, refuse: bool) {
        self.shared.refuse.store(refuse, Ordering::SeqCst);
    }

    /// Connections currently open through the proxy.
    pub fn connections(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// Connections accepted so far, including refused ones.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Bytes forwarded in direction `dir` so far, counted just before they are written, so a
    /// peer that has read them sees them counted; discarded bytes do not count.
    pub fn bytes(&self, dir: Direction) -> u64 {
        self.shared.flow(dir).forwarded.load(Ordering::SeqCst)
    }

    /// Bytes the proxy has read in direction `dir` and currently holds back (frozen or
    /// delayed), over all connections. Useful to wait until a reply is "in the network".
    pub fn held(&self, dir: Direction) -> u64 {
        self.shared.flow(dir).held.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        let _ = self.control.send(Control::Shutdown);
        // Join only once the thread said it is finishing, so that drop can never hang.
        if self.finished.recv_timeout(CONTROL_TIMEOUT).is_ok() {
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

fn run_thread(
    listener: std::net::TcpListener,
    upstream: SocketAddr,
    shared: Arc<Shared>,
    control: mpsc::UnboundedReceiver<Control>,
    ready: std_mpsc::Sender<std::io::Result<()>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        accept_loop(listener, upstream, shared, control).await;
    });
    // Dropping the runtime drops anything left; the listener is already closed.
    drop(runtime);
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    shared: Arc<Shared>,
    mut control: mpsc::UnboundedReceiver<Control>,
) {
    let mut conns = JoinSet::new();
    let mut next_id = 0u64;
    loop {
        tokio::select! {
            cmd = control.recv() => match cmd {
                Some(Control::Reset(ack)) => {
                    // Aborting drops each connection's future, whose `Conn` resets both sockets.
                    conns.shutdown().await;
                    let _ = ack.send(());
                }
                Some(Control::Shutdown) | None => break,
            },
            accepted = listener.accept() => match accepted {
                Ok((client, _)) => {
                    shared.accepted.fetch_add(1, Ordering::SeqCst);
                    if shared.refuse.load(Ordering::SeqCst) {
                        drop(client); // a plain close: the client reads EOF
                        continue;
                    }
                    next_id += 1;
                    // Registered before its task runs, so `conns()` lists it as soon as it
                    // is accepted, and `reset_conn` can abort it from then on.
                    let ctl = shared.register(next_id);
                    let conn = Conn::new(client, Arc::clone(&shared), ctl.clone());
                    let abort = conns.spawn(serve(conn, upstream));
                    let _ = ctl.abort.set(abort);
                }
                Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    conns.shutdown().await;
}

/// Owns both sockets of one proxied connection and counts it as open. Unless the connection
/// ended cleanly, dropping it resets both sockets, so an aborted task (reset, shutdown) is
/// seen by both peers as a TCP reset.
struct Conn {
    client: TcpStream,
    upstream: Option<TcpStream>,
    clean: bool,
    shared: Arc<Shared>,
    ctl: Arc<ConnCtl>,
}

impl Conn {
    fn new(client: TcpStream, shared: Arc<Shared>, ctl: Arc<ConnCtl>) -> Self {
        shared.open.fetch_add(1, Ordering::SeqCst);
        Conn {
            client,
            upstream: None,
            clean: false,
            shared,
            ctl,
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if !self.clean {
            // `set_linger` is deprecated in newer Tokio because a non-zero linger blocks on
            // close; zero does not block (the kernel sends RST at once). `set_zero_linger` only
            // exists since Tokio 1.50 and the workspace allows 1.40.
            #[allow(deprecated)]
            {
                let _ = self.client.set_linger(Some(Duration::ZERO));
                if let Some(upstream) = &self.upstream {
                    let _ = upstream.set_linger(Some(Duration::ZERO));
                }
            }
        }
        self.shared.open.fetch_sub(1, Ordering::SeqCst);
        self.shared.unregister(self.ctl.id);
    }
}

async fn serve(mut conn: Conn, upstream: SocketAddr) {
    let _ = conn.client.set_nodelay(true);
    let server = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(upstream)).await {
        Ok(Ok(s)) => s,
        // Upstream down: the client gets a reset, as it would from a dead node.
        _ => return,
    };
    let _ = server.set_nodelay(true);
    let (shared, ctl) = (Arc::clone(&conn.shared), Arc::clone(&conn.ctl));
    let server = conn.upstream.insert(server);
    let (client_read, client_write) = conn.client.split();
    let (server_read, server_write) = server.split();
    let up = pump(client_read, server_write, &shared.up, &ctl.up);
    let down = pump(server_read, client_write, &shared.down, &ctl.down);
    conn.clean = tokio::try_join!(up, down).is_ok();
}

/// A chunk as read: when, in which blackhole generation, and the bytes (empty: end of stream).
/// Counted in [`Flow::held`] until it is released or dropped (also by an aborted connection).
struct Chunk<'a> {
    read_at: Instant,
    blackholes: u64,
    bytes: Vec<u8>,
    /// The proxy-wide and the connection's held counters.
    held: Option<[&'a AtomicU64; 2]>,
}

impl<'a> Chunk<'a> {
    fn new(bytes: Vec<u8>, blackholes: u64, held: [&'a AtomicU64; 2]) -> Self {
        for h in held {
            h.fetch_add(bytes.len() as u64, Ordering::SeqCst);
        }
        Chunk {
            read_at: Instant::now(),
            blackholes,
            bytes,
            held: Some(held),
        }
    }

    /// No longer held: it is about to be written or dropped.
    fn unhold(&mut self) {
        if let Some(held) = self.held.take() {
            for h in held {
                h.fetch_sub(self.bytes.len() as u64, Ordering::SeqCst);
            }
        }
    }
}

impl Drop for Chunk<'_> {
    fn drop(&mut self) {
        self.unhold();
    }
}

/// Forwards one direction until end of stream or an error: a reader that queues chunks and a
/// writer that releases them as the mode allows.
async fn pump(
    mut from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    flow: &Flow,
    conn: &ConnFlow,
) -> std::io::Result<()> {
    let (queue, mut queued) = mpsc::unbounded_channel::<Chunk<'_>>();
    // The connection's effective mode (its override, else the proxy-wide mode).
    let state = conn.state.subscribe();
    let read_state = state.clone();
    let reader = async move {
        let mut buf = vec![0; CHUNK];
        loop {
            let n = from.read(&mut buf).await?;
            let DirState { mode, blackholes } = *read_state.borrow();
            if mode == Mode::Blackhole {
                if n == 0 {
                    return Ok(()); // the FIN is lost as well
                }
                continue;
            }
            // An empty chunk marks the end of stream, so the FIN keeps its place and time.
            let chunk = Chunk::new(buf[..n].to_vec(), blackholes, [&flow.held, &conn.held]);
            if queue.send(chunk).is_err() || n == 0 {
                return Ok(());
            }
        }
    };
    let writer = async move {
        let mut state = state;
        while let Some(mut chunk) = queued.recv().await {
            let release = released(&mut state, &chunk).await;
            chunk.unhold();
            if !release {
                continue;
            }
            if chunk.bytes.is_empty() {
                to.shutdown().await?;
                break;
            }
            // Counted before writing, so a peer that has read the bytes sees them counted.
            flow.forwarded
                .fetch_add(chunk.bytes.len() as u64, Ordering::SeqCst);
            conn.forwarded
                .fetch_add(chunk.bytes.len() as u64, Ordering::SeqCst);
            to.write_all(&chunk.bytes).await?;
        }
        Ok::<_, std::io::Error>(())
    };
    tokio::try_join!(reader, writer).map(|_| ())
}

/// Waits until `chunk` may be written: `true` to write it, `false` to drop it.
async fn released(state: &mut watch::Receiver<DirState>, chunk: &Chunk<'_>) -> bool {
    loop {
        let DirState { mode, blackholes } = *state.borrow_and_update();
        if blackholes != chunk.blackholes {
            return false; // a blackhole began while it was held
        }
        let due = match mode {
            Mode::Pass => return true,
            Mode::Blackhole => return false,
            Mode::Delay(d) => chunk.read_at.checked_add(d),
            Mode::Freeze => None,
        };
        match due {
            Some(due) if Instant::now() >= due => return true,
            Some(due) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(due) => {}
                    changed = state.changed() => if changed.is_err() { return false },
                }
            }
            // Frozen (or a delay too long to represent): wait for the next mode.
            None => {
                if state.changed().await.is_err() {
                    return false;
                }
            }
        }
    }
}
