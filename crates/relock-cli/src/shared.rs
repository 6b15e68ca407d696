//! What the `relock` command's subcommands share (the bench lab, `relock-bench`, reuses it
//! too): the message line, signal handling and the clients to shut down, the Redis URL to use,
//! and the error type. Not a stable API: the command is the product.

/// Writes `relock: MESSAGE` to stderr. Never panics (unlike `eprintln!` on a closed stderr):
/// relock must go on to stop its command and release its lock.
pub fn say(message: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "relock: {message}");
}

/// SIGINT and SIGTERM: stop the command, release its locks, exit 130 or 143.
pub mod signals {
    use std::sync::Mutex;

    /// Every client a command made, so an interrupted command still releases its locks.
    static CLIENTS: Mutex<Vec<relock::Client>> = Mutex::new(Vec::new());

    /// Registers `client` to be shut down (its locks released) when the command ends or is
    /// interrupted.
    pub fn register(client: &relock::Client) {
        CLIENTS.lock().unwrap().push(client.clone());
    }

    /// Resolves with the exit code for the first SIGINT (130) or SIGTERM (143).
    pub async fn received() -> u8 {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut int), Ok(mut term)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) else {
                return std::future::pending().await;
            };
            tokio::select! {
                _ = int.recv() => 130,
                _ = term.recv() => 143,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            130
        }
    }

    /// Shuts every registered client down (each releases what it holds), all at once.
    pub async fn shut_down_clients() {
        let clients: Vec<relock::Client> = std::mem::take(&mut *CLIENTS.lock().unwrap());
        let mut all = tokio::task::JoinSet::new();
        for c in clients {
            all.spawn(async move { c.shutdown().await });
        }
        while all.join_next().await.is_some() {}
    }
}

/// The URL from `--url`, RELOCK_URL, REDIS_URL, or the local default.
pub fn resolve_url(flag: Option<String>) -> String {
    flag.or_else(|| std::env::var("RELOCK_URL").ok().filter(|s| !s.is_empty()))
        .or_else(|| std::env::var("REDIS_URL").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "redis://127.0.0.1:6379".into())
}

/// TLS options of every command that connects (`rediss://` URLs). Without `--tls-ca` the
/// system's root certificates are trusted (`SSL_CERT_FILE` and `SSL_CERT_DIR` choose others,
/// as for OpenSSL).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// Trust this CA (a PEM file) instead of the system's roots: a private CA, a managed
    /// Redis's own CA, a self-signed server.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// Present this client certificate chain (PEM) to a server that verifies clients
    /// (`tls-auth-clients yes`); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The client certificate's private key (PEM); needs --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
}

impl TlsArgs {
    /// A client for `url` with these TLS options.
    ///
    /// # Errors
    /// A file that cannot be read (named, with the reason); the library's connect errors.
    pub async fn connect(&self, url: String) -> Result<relock::Client, CliError> {
        self.build(relock::Client::builder().url(url)).await
    }

    /// Builds `builder` with these TLS options.
    ///
    /// # Errors
    /// As [`TlsArgs::connect`].
    pub async fn build(&self, builder: relock::ClientBuilder) -> Result<relock::Client, CliError> {
        let builder = self.apply(
            builder,
            relock::ClientBuilder::tls_ca_pem,
            relock::ClientBuilder::tls_client_cert_pem,
        )?;
        builder.build().await.map_err(flag_hint)
    }

    /// Builds a quorum client from `builder` with these TLS options on every node.
    ///
    /// # Errors
    /// As [`TlsArgs::connect`].
    pub async fn build_quorum(
        &self,
        builder: relock::QuorumClientBuilder,
    ) -> Result<relock::QuorumClient, CliError> {
        let builder = self.apply(
            builder,
            relock::QuorumClientBuilder::tls_ca_pem,
            relock::QuorumClientBuilder::tls_client_cert_pem,
        )?;
        builder.build().await.map_err(flag_hint)
    }

    /// `builder` with the files' contents given to its CA and client-certificate setters.
    fn apply<B>(
        &self,
        mut builder: B,
        ca_pem: fn(B, Vec<u8>) -> B,
        client_pem: fn(B, Vec<u8>, Vec<u8>) -> B,
    ) -> Result<B, CliError> {
        let (ca, client) = self.read()?;
        if let Some(ca) = ca {
            builder = ca_pem(builder, ca);
        }
        if let Some((cert, key)) = client {
            builder = client_pem(builder, cert, key);
        }
        Ok(builder)
    }

    /// The files' contents: the CA, and the client's certificate chain and key.
    #[allow(clippy::type_complexity)]
    fn read(&self) -> Result<(Option<Vec<u8>>, Option<(Vec<u8>, Vec<u8>)>), CliError> {
        let read = |flag: &str, path: &std::path::Path| {
            std::fs::read(path).map_err(|e| {
                CliError::Failed(format!("{flag} {}: cannot read it: {e}", path.display()))
            })
        };
        let ca = self
            .tls_ca
            .as_deref()
            .map(|p| read("--tls-ca", p))
            .transpose()?;
        let client = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some((read("--tls-cert", cert)?, read("--tls-key", key)?)),
            _ => None,
        };
        Ok((ca, client))
    }
}

/// The library's hint names its builder; a shell user has a flag.
fn flag_hint(e: relock::Error) -> CliError {
    let text = e.to_string();
    if text.contains("tls_ca_pem") {
        CliError::Failed(format!("{text} (from the relock command: --tls-ca FILE)"))
    } else {
        e.into()
    }
}

/// Who an owner field of `lock` belongs to, in words (`, run "billing" (pid 4242 on web-3,
/// 10.0.0.5:51234)`), if its client named itself; empty otherwise or when the server does not
/// let us read it.
pub async fn owner_words(lock: &relock::Lock, field: &str) -> String {
    match lock.describe_owner(field).await {
        Ok(Some(o)) => format!(", `{}` (pid {} on {}, {})", o.name, o.pid, o.host, o.addr),
        _ => String::new(),
    }
}

/// How the command names who wrote an owner field (`status`, `watch`, `run`'s conflict).
pub fn layout_name(l: relock::OwnerLayout) -> &'static str {
    match l {
        relock::OwnerLayout::Relock => "relock",
        relock::OwnerLayout::Redisson => "redisson",
        relock::OwnerLayout::NodeRedisson => "node-redisson",
        _ => "unknown",
    }
}

/// Errors of the command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// From the library, in the command's words (its flags and docs, not the library's).
    #[error("{}", for_the_shell(&.0.to_string()))]
    Lock(#[from] relock::Error),
    /// Anything else, said in words.
    #[error("{0}")]
    Failed(String),
}

/// A library message as a shell user reads it: the library's builders and guides become the
/// command's flags and `docs/cli.md`'s sections.
pub fn for_the_shell(text: &str) -> String {
    const WORDS: &[(&str, &str)] = &[
        (
            "QuorumClientBuilder::restart_quarantine (Duration::ZERO turns it off, at the risk described in relock::guide::safety, Restarted nodes)",
            "--restart-quarantine (0 turns it off, at the risk the safety guide describes under \"Restarted nodes\": https://docs.rs/relock-redis/latest/relock/guide/safety/)",
        ),
        ("QuorumClientBuilder::restart_quarantine", "--restart-quarantine"),
        ("ClientBuilder::key_prefix", "a prefix of your own in the name, such as locks:NAME"),
        ("ClientBuilder::watchdog_lease", "--watchdog-lease"),
        ("relock::guide::operations, Credentials", "docs/cli.md, Connecting"),
        ("relock::guide::operations, URLs", "docs/cli.md, Connecting"),
        (
            "relock::guide::operations lists (Least-privilege ACL users)",
            "docs/cli.md lists (Connecting)",
        ),
        ("relock::guide::operations", "docs/cli.md"),
        (
            "relock::guide::safety",
            "the safety guide (https://docs.rs/relock-redis/latest/relock/guide/safety/)",
        ),
    ];
    let mut out = text.to_string();
    for (library, shell) in WORDS {
        out = out.replace(library, shell);
    }
    out
}

/// Logs to stderr what RUST_LOG (or RELOCK_LOG) picks, `warn` by default; colours only on a
/// terminal.
pub fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RELOCK_LOG"))
        .unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
}

/// Runs `work` to its end, or until the first SIGINT/SIGTERM (exit 130/143). Either way every
/// registered client is then shut down (releasing what it holds) before the exit code is
/// returned; an error is said on stderr (exit 1).
pub async fn run_until_signalled<E: std::fmt::Display>(
    work: impl std::future::Future<Output = Result<(), E>>,
) -> std::process::ExitCode {
    let result = tokio::select! {
        r = work => r,
        code = signals::received() => {
            // The work is dropped here (its guards start their releases); every client it
            // made then releases what it still holds before the process exits.
            signals::shut_down_clients().await;
            say(format_args!("interrupted; locks released"));
            return std::process::ExitCode::from(code);
        }
    };
    signals::shut_down_clients().await;
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            say(format_args!("{e}"));
            std::process::ExitCode::FAILURE
        }
    }
}

/// A duration as a shell user writes it: a bare number is seconds (`--wait 2`, as `flock -w 2`
/// and `timeout 2`), else a number with a unit (`30s`, `2m`, `1h30m`, `500ms`).
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    const HINT: &str = "write seconds (2, 0.5) or a number with a unit (30s, 2m, 500ms)";
    let t = text.trim();
    if t.starts_with(|c: char| c.is_ascii_digit() || c == '.') && t.parse::<f64>().is_ok() {
        let secs: f64 = t.parse().unwrap_or(f64::NAN);
        return std::time::Duration::try_from_secs_f64(secs)
            .map_err(|_| format!("`{text}` is not a duration: {HINT}"));
    }
    humantime::parse_duration(t).map_err(|e| format!("`{text}` is not a duration ({e}): {HINT}"))
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    proptest::proptest! {
        /// Any text a user types as a duration: a duration or an error that says how to write
        /// one, never a panic.
        #[test]
        fn any_text_is_a_duration_or_says_how_to_write_one(text in ".{0,24}") {
            if let Err(e) = parse_duration(&text) {
                proptest::prop_assert!(e.contains("is not a duration"), "{}", e);
            }
        }

        #[test]
        fn numbers_with_units_and_bare_seconds_never_panic(
            n in proptest::num::f64::ANY,
            unit in proptest::sample::select(vec!["", "s", "ms", "m", "h", "d", "us", "ns", "y"]),
        ) {
            let _ = parse_duration(&format!("{n}{unit}"));
            let _ = parse_duration(&format!("{}{unit}", n as u64));
        }
    }

    #[test]
    fn a_bare_number_is_seconds_and_units_are_read() {
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        for bad in ["", "-1", "abc", "1e999", "2 parsecs"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("write seconds"), "{bad:?}: {e}");
        }
    }
}
