//! A script call's keys and arguments reach the server byte for byte, whatever their lengths:
//! empty words, non-ASCII names and words, a word of several MB, and a batch of many
//! commands, sent by SHA1 and again after `SCRIPT FLUSH` (the script's body), for a write
//! and a read.

use relock::Commands;
use relock_tests::*;

fn words(round: usize) -> Vec<(String, String)> {
    let long: String = "é".repeat(2 * 1024 * 1024) + &round.to_string();
    let mut w = vec![
        (format!("{{zürich:ロック🔒}}:empty:{round}"), String::new()),
        (format!("{{zürich:ロック🔒}}:e:{round}"), "é".to_string()),
        (format!("{{zürich:ロック🔒}}:long:{round}"), long),
        (
            format!("{{zürich:ロック🔒}}:{}", "k".repeat(300)),
            "x".repeat(round + 1),
        ),
    ];
    for i in 0..400 {
        w.push((
            format!("{{zürich:ロック🔒}}:{i}:{round}"),
            "v".repeat(i % 7) + &"ü".repeat(i % 3),
        ));
    }
    w
}

#[tokio::test]
async fn script_arguments_of_every_length_reach_the_server_exactly_by_sha_and_after_a_flush() {
    let server = server();
    let c = client(&server).await;
    let name = "zürich:ロック🔒";
    for round in 0..4 {
        if round % 2 == 1 {
            server.script_flush().unwrap();
        }
        let guard = c.lock(name).lock().await.unwrap();
        let w = words(round);
        let mut batch = Commands::new();
        for (k, v) in &w {
            batch = batch.cmd("SET").key(k.clone()).arg(v);
        }
        let replies = guard.write(batch).await.unwrap();
        assert_eq!(replies.len(), w.len());
        for (k, v) in &w {
            let got = server.cmd(&["GET", k]).unwrap();
            assert_eq!(
                got,
                relock_testkit::Value::Bulk(Some(v.as_bytes().to_vec())),
                "{k}"
            );
        }
        if round % 2 == 1 {
            server.script_flush().unwrap();
        }
        let mut read = Commands::new();
        for (k, _) in &w {
            read = read.cmd("STRLEN").key(k.clone());
        }
        let lens = guard.read(read).await.unwrap();
        let lens: Vec<i64> = lens.into_iter().map(|v| v.as_i64().unwrap()).collect();
        let want: Vec<i64> = w.iter().map(|(_, v)| v.len() as i64).collect();
        assert_eq!(lens, want);
        assert!(c.lock(name).is_locked().await.unwrap());
        guard.unlock().await.unwrap();
        assert!(!c.lock(name).is_locked().await.unwrap());
        for (k, _) in &w {
            server.cmd(&["DEL", k]).unwrap();
        }
    }
    assert_nothing_left(&server).await;
}
