//! One server listed twice under different URLs (an alias of its host, another database
//! number) would vote twice, so that it alone could make a majority of three: the quorum
//! client refuses it at build, naming both URLs; the same URL twice is refused before connecting.

use relock::Error;
use relock_tests::*;

#[tokio::test]
async fn one_server_under_two_urls_is_refused_as_two_masters() {
    let m = masters(3);
    let port = m[0].port();
    for alias in [
        format!("redis://localhost:{port}"),
        format!("redis://127.0.0.1:{port}/1"),
    ] {
        let r = relock::QuorumClient::builder()
            .urls([m[0].url(), alias.clone(), m[1].url()])
            .build()
            .await;
        match r {
            Err(Error::InvalidArgument { name, reason }) => {
                assert_eq!(name, "urls");
                assert!(reason.contains("same server"), "{reason}");
                assert!(reason.contains(&alias), "names the alias: {reason}");
            }
            other => panic!("{alias}: expected InvalidArgument, got {other:?}"),
        }
    }
    let twice = relock::QuorumClient::builder()
        .urls([m[0].url(), m[0].url(), m[1].url()])
        .build()
        .await;
    assert!(
        matches!(twice, Err(Error::InvalidArgument { .. })),
        "{twice:?}"
    );
    // Nothing was left connected: three different masters still make a client.
    let ok = relock::QuorumClient::builder()
        .urls(m.urls())
        .build()
        .await
        .unwrap();
    ok.shutdown().await;
}
