//! `relock write NAME CMD KEY ARGS…`: one Redis command run only while the hold that `relock
//! run` handed its command (`RELOCK_OWNER`) is the lock's holder, checked by the server as it
//! runs it (a guarded write). For a shell script under `relock run`, whose writes must not
//! land once the lock has passed to someone else.

use relock::fred::types::Value;

use relock_cli::shared::{resolve_url, say, CliError};

/// The hold was not the lock's holder when the write arrived (as `relock run`'s lost code).
const LOST_EXIT: u8 = 76;

/// Options of `relock write`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example, in a script that relock run runs:
  relock run orders:42 -- sh -c 'relock write orders:42 HSET {orders:42}:row status paid'

The command's first argument is its key (SET, HSET, INCR, LPUSH, XADD…); every key must share
the lock's hash tag ({orders:42}:row for the lock orders:42). Prints each reply. Exit codes: 0
written; 76 refused: the hold was not the lock's holder when the write arrived (nothing was
written); 1 an error (the outcome of a write whose reply was lost is unknown: the message says
so).")]
pub(crate) struct Args {
    /// The lock's name (RELOCK_NAME under relock run).
    name: String,
    /// The hold's owner field; default: RELOCK_OWNER, which relock run gives its command.
    #[arg(long)]
    owner: Option<String>,
    /// Redis URL; else RELOCK_URL, else REDIS_URL, else redis://127.0.0.1:6379.
    #[arg(long)]
    url: Option<String>,
    #[command(flatten)]
    tls: relock_cli::shared::TlsArgs,
    /// The command, its key, then its other arguments.
    #[arg(trailing_var_arg = true, value_name = "CMD", num_args = 2.., required = true)]
    command: Vec<String>,
}

/// Runs the guarded write; returns the process's exit code.
pub(crate) async fn write(args: Args) -> Result<u8, CliError> {
    // With the command's words taken as they come, an option written after them would be
    // data: `--url redis://:pw@…` stored in Redis. relock write's options go first.
    if let Some(w) = args.command.iter().find(|w| {
        ["--url", "--owner", "--tls"]
            .iter()
            .any(|o| w.starts_with(o))
    }) {
        let option = w.split('=').next().unwrap_or(w);
        return Err(CliError::Failed(format!(
            "`{option}` after the command would be written as data: put relock write's options before the lock's name (relock write {option} … NAME CMD KEY …)"
        )));
    }
    let mut words = args.command.into_iter();
    let (Some(cmd), Some(key)) = (words.next(), words.next()) else {
        return Err(CliError::Failed(
            "give the command and its key: relock write NAME CMD KEY [ARGS…]".into(),
        ));
    };
    let mut batch = relock::Commands::new().cmd(cmd).key(key);
    for w in words {
        batch = batch.arg(w);
    }
    let Some(owner) = args
        .owner
        .or_else(|| std::env::var("RELOCK_OWNER").ok())
        .filter(|o| !o.is_empty())
    else {
        return Err(CliError::Failed(
            "no hold to write under: run it from the command of `relock run` (which sets RELOCK_OWNER), or give --owner".into(),
        ));
    };
    // Under relock run, what it holds: a guarded write needs one server's exclusive hold.
    match std::env::var("RELOCK_KIND").as_deref() {
        Ok("quorum") => {
            return Err(CliError::Failed(
                "a quorum lock has no single server to check the hold on as it writes: pass RELOCK_TOKEN with the write and have the data refuse lower tokens (docs/cli.md, relock write)".into(),
            ))
        }
        Ok("read" | "permit") => {
            return Err(CliError::Failed(
                "relock write needs an exclusive hold: run it under relock run without -s or --permits".into(),
            ))
        }
        _ => {}
    }
    let client = args.tls.connect(resolve_url(args.url.clone())).await?;
    let r = client.lock(&args.name).write_as(&owner, batch).await;
    client.shutdown().await;
    match r {
        Ok(replies) => {
            for r in &replies {
                println!("{}", show(r));
            }
            Ok(0)
        }
        Err(relock::Error::LockLost { .. }) => {
            say(format_args!(
                "`{}` is not held by this hold any more (its lease ended, or it was deleted): nothing was written",
                args.name
            ));
            Ok(LOST_EXIT)
        }
        Err(e) => Err(e.into()),
    }
}

/// A reply as redis-cli prints it, more or less.
fn show(v: &Value) -> String {
    match v {
        Value::Null => "(nil)".into(),
        Value::Integer(n) => n.to_string(),
        Value::Array(items) => items.iter().map(show).collect::<Vec<_>>().join("\n"),
        other => other.as_string().unwrap_or_else(|| format!("{other:?}")),
    }
}
