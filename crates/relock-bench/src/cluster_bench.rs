//! `relock-bench cluster`: uncontended lock+unlock pairs per second on one master and on a
//! 3-master Redis Cluster (3 replicas), both started locally, in the same run.

use std::time::Duration;

use relock_testkit::{RedisCluster, RedisServer};

use crate::shared::CliError;

/// Options of `relock-bench cluster`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Seconds per case.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// Tasks (each on its own key).
    #[arg(long, default_value_t = 64)]
    tasks: usize,
    /// Command connections per client (per node on the cluster).
    #[arg(long, default_value_t = 4)]
    connections: usize,
}

pub(crate) async fn run(args: Args) -> Result<(), CliError> {
    let secs = Duration::from_secs(args.seconds);
    let single = RedisServer::start()?;
    let cluster = RedisCluster::start()?;
    println!(
        "relock-bench cluster: {} tasks on own keys, {} connections, {} s per case\n",
        args.tasks, args.connections, args.seconds
    );
    let one = crate::bench::uncontended(
        &single.url(),
        args.tasks,
        Some(args.connections),
        true,
        secs,
        "one master",
    )
    .await?
    .pairs;
    println!("  one master                 {one:>9.0} pairs/s");
    let three = crate::bench::uncontended(
        &cluster.url(),
        args.tasks,
        Some(args.connections),
        true,
        secs,
        "3-master cluster",
    )
    .await?
    .pairs;
    println!(
        "  3-master cluster           {three:>9.0} pairs/s  ({:.2} x one master)",
        three / one.max(1.0)
    );
    Ok(())
}
