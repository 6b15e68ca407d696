//! A cluster URL whose nodes are all unreachable fails within the connect timeout with
//! `Error::Connection` naming them; malformed cluster and sentinel URLs get `InvalidArgument`.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use relock::Error;

fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn a_cluster_url_with_no_reachable_node_fails_fast_naming_the_nodes() {
    let (p1, p2) = (closed_port(), closed_port());
    let url = format!("redis-cluster://127.0.0.1:{p1},127.0.0.1:{p2}");
    let t = Instant::now();
    let r = relock::Client::builder()
        .url(url)
        .connect_timeout(Duration::from_secs(1))
        .build()
        .await;
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let Err(Error::Connection { url, cause }) = r else {
        panic!("{r:?}")
    };
    assert!(
        url.contains(&p1.to_string()) && url.contains(&p2.to_string()),
        "{url}: {cause}"
    );

    for bad in [
        "redis://127.0.0.1:1,127.0.0.1:2",
        "redis-sentinel://127.0.0.1:26379",
        "redis-cluster://",
        "redis-clustr://127.0.0.1:1",
    ] {
        let r = relock::Client::connect(bad).await;
        assert!(
            matches!(&r, Err(Error::InvalidArgument { name: "url", .. })),
            "{bad}: {r:?}"
        );
    }
}
