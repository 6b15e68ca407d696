//! A guarded write carries binary values (every byte value, bytes that are not UTF-8, an
//! empty value, a value of a MB) to the server byte for byte, as arguments and as a hash's
//! field and value, by SHA1 and again after `SCRIPT FLUSH` (the script's body); a guarded read
//! returns them as the same bytes.

use fred::types::Value;
use relock::Commands;
use relock_tests::*;

/// Each key's value: every byte value once, bytes that are not UTF-8, nothing, a MB.
fn values() -> Vec<(String, Vec<u8>)> {
    let every: Vec<u8> = (0..=255u8).collect();
    let not_utf8 = vec![0xff, 0xfe, 0x00, 0xc3, 0x28, 0xa0, 0xa1];
    let big: Vec<u8> = (0..1024 * 1024).map(|i| (i * 7 % 256) as u8).collect();
    vec![
        ("{t111}:every".into(), every),
        ("{t111}:not-utf8".into(), not_utf8),
        ("{t111}:empty".into(), Vec::new()),
        ("{t111}:big".into(), big),
    ]
}

#[tokio::test]
async fn a_guarded_batch_carries_binary_values_byte_for_byte_both_ways() {
    let server = server();
    let c = client(&server).await;
    let guard = c.lock("t111").lock().await.unwrap();
    let field: &[u8] = &[0x80, 0x00, b'f'];
    for round in 0..2 {
        if round == 1 {
            server.script_flush().unwrap();
        }
        let w = values();
        let mut batch = Commands::new();
        for (k, v) in &w {
            batch = batch.cmd("SET").key(k.clone()).arg_bytes(v);
        }
        batch = batch
            .cmd("HSET")
            .key("{t111}:hash")
            .arg_bytes(field)
            .arg_bytes(&w[1].1);
        let replies = guard.write(batch).await.unwrap();
        assert_eq!(replies.len(), w.len() + 1);
        for (k, v) in &w {
            let got = server.cmd(&["GET", k]).unwrap();
            assert_eq!(got, relock_testkit::Value::Bulk(Some(v.clone())), "{k}");
        }
        if round == 1 {
            server.script_flush().unwrap();
        }
        let mut read = Commands::new();
        for (k, _) in &w {
            read = read.cmd("GET").key(k.clone());
        }
        read = read.cmd("HGET").key("{t111}:hash").arg_bytes(field);
        let got = guard.read(read).await.unwrap();
        let want: Vec<Vec<u8>> = w
            .iter()
            .map(|(_, v)| v.clone())
            .chain([w[1].1.clone()])
            .collect();
        let got: Vec<Vec<u8>> = got
            .into_iter()
            .map(|v| match v {
                Value::Bytes(b) => b.to_vec(),
                Value::String(s) => s.as_bytes().to_vec(),
                other => panic!("not a bulk reply: {other:?}"),
            })
            .collect();
        assert!(
            got == want,
            "the values read back differ from those written"
        );
    }
    guard.unlock().await.unwrap();
    server.cmd(&["DEL", "{t111}:hash"]).unwrap();
    for (k, _) in values() {
        server.cmd(&["DEL", &k]).unwrap();
    }
    c.shutdown().await;
    assert_nothing_left(&server).await;
}
