//! `relock demo`: contending workers in two clients, a non-atomic counter, and a summary that
//! shows the lock did its job.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fred::interfaces::KeysInterface;

use relock_cli::shared::{resolve_url, CliError};

/// Options of `relock demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Redis to use (as for every command: RELOCK_URL, REDIS_URL, else
    /// redis://127.0.0.1:6379). `--redis` is the old name.
    #[arg(long, alias = "redis")]
    url: Option<String>,
    /// Workers per client (two clients).
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// How long each holder keeps the lock, in ms.
    #[arg(long, default_value_t = 1)]
    hold_ms: u64,
    /// Lock name.
    #[arg(long, default_value = "relock:demo")]
    name: String,
    #[command(flatten)]
    tls: relock_cli::shared::TlsArgs,
}

#[derive(Default)]
struct Shared {
    inside: AtomicUsize,
    max_inside: AtomicUsize,
    acquisitions: AtomicU64,
    token_regressions: AtomicU64,
    /// (highest token seen, (release start, releasing worker)).
    last: Mutex<(u64, Option<(Instant, usize)>)>,
    /// Handoff latencies (a demo's few thousand: sorted once at the end).
    handoffs: Mutex<Vec<Duration>>,
}

pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    let url = resolve_url(args.url.clone());
    let counter_key = format!("{}:counter", args.name);
    let clients = [
        args.tls.connect(url.clone()).await?,
        args.tls.connect(url.clone()).await?,
    ];
    // The counter goes through relock's own connections: any URL relock takes (cluster,
    // sentinel, TLS, credentials) works for it too.
    let redis = clients[0].pool().next().clone();
    let _: () = redis
        .del(counter_key.as_str())
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    for c in &clients {
        relock_cli::shared::signals::register(c);
    }
    let shared = Arc::new(Shared::default());
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    println!(
        "{} workers in 2 clients contend for lock `{}` for {} s (hold {} ms each time)",
        2 * args.workers,
        args.name,
        args.seconds,
        args.hold_ms
    );
    let mut tasks = Vec::new();
    for (c, client) in clients.iter().enumerate() {
        for w in 0..args.workers {
            let id = c * args.workers + w;
            let (lock, redis, shared, key) = (
                client.lock(&args.name),
                redis.clone(),
                shared.clone(),
                counter_key.clone(),
            );
            let hold = Duration::from_millis(args.hold_ms);
            tasks.push(tokio::spawn(async move {
                while Instant::now() < deadline {
                    let guard = lock.lock().await?;
                    worker_step(id, &guard, &shared, &redis, &key, hold).await?;
                    guard.unlock().await?;
                }
                Ok::<(), CliError>(())
            }));
        }
    }
    let progress = tokio::spawn({
        let shared = shared.clone();
        async move {
            let start = Instant::now();
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                println!(
                    "  {:>3} s: {} acquisitions",
                    start.elapsed().as_secs(),
                    shared.acquisitions.load(Ordering::Relaxed)
                );
            }
        }
    });
    for t in tasks {
        t.await.map_err(|e| CliError::Failed(e.to_string()))??;
    }
    progress.abort();

    let counter: u64 = redis
        .get(counter_key.as_str())
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    let _: () = redis
        .del(counter_key.as_str())
        .await
        .map_err(|e| CliError::Failed(e.to_string()))?;
    for c in &clients {
        c.shutdown().await;
    }
    let acquisitions = shared.acquisitions.load(Ordering::SeqCst);
    let max_inside = shared.max_inside.load(Ordering::SeqCst);
    let regressions = shared.token_regressions.load(Ordering::SeqCst);
    let mut handoffs = std::mem::take(&mut *shared.handoffs.lock().unwrap());
    handoffs.sort_unstable();
    let percentile = |p: usize| -> Duration {
        match handoffs.len() {
            0 => Duration::ZERO,
            n => handoffs[((n * p).div_ceil(100)).clamp(1, n) - 1],
        }
    };
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1000.0);
    let ok = counter == acquisitions && max_inside == 1 && regressions == 0;
    println!("\nsummary");
    println!("  acquisitions            {acquisitions}");
    println!(
        "  final counter           {counter} ({})",
        if counter == acquisitions {
            "exact"
        } else {
            "LOST UPDATES"
        }
    );
    println!("  most holders at once    {max_inside}");
    println!(
        "  handoffs                {} (release -> another worker's acquire) p50 {} p99 {}",
        handoffs.len(),
        ms(percentile(50)),
        ms(percentile(99))
    );
    println!(
        "  fencing tokens          {}",
        if regressions == 0 {
            "strictly increasing".to_string()
        } else {
            format!("{regressions} went backwards")
        }
    );
    if ok {
        println!("\nOK: mutual exclusion held");
        Ok(())
    } else {
        Err(CliError::Failed(
            "the lock failed its checks (see summary)".into(),
        ))
    }
}

async fn worker_step(
    id: usize,
    guard: &relock::LockGuard,
    shared: &Shared,
    redis: &fred::clients::Client,
    key: &str,
    hold: Duration,
) -> Result<(), CliError> {
    let got = Instant::now();
    let now_inside = shared.inside.fetch_add(1, Ordering::SeqCst) + 1;
    shared.max_inside.fetch_max(now_inside, Ordering::SeqCst);
    shared.acquisitions.fetch_add(1, Ordering::SeqCst);
    {
        let mut last = shared.last.lock().unwrap();
        if guard.fencing_token() <= last.0 {
            shared.token_regressions.fetch_add(1, Ordering::SeqCst);
        }
        last.0 = last.0.max(guard.fencing_token());
        if let Some((released, by)) = last.1 {
            if by != id {
                shared.handoffs.lock().unwrap().push(got - released);
            }
        }
    }
    let fail = |e: fred::error::Error| CliError::Failed(e.to_string());
    let v: Option<u64> = redis.get(key).await.map_err(fail)?;
    if !hold.is_zero() {
        tokio::time::sleep(hold).await;
    }
    let _: () = redis
        .set(key, v.unwrap_or(0) + 1, None, None, false)
        .await
        .map_err(fail)?;
    shared.inside.fetch_sub(1, Ordering::SeqCst);
    shared.last.lock().unwrap().1 = Some((Instant::now(), id));
    Ok(())
}
