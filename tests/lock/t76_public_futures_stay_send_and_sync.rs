//! Compile-time check: the public futures that are `Send + Sync` at db59f24 stay so.
//! (`Lock::lock()` & co. and `Client::shutdown()` are not `Sync` there either: fred's
//! subscribe future; not checked here.)
#![allow(dead_code)]

use std::time::Duration;

fn send_sync<T: Send + Sync>(_: &T) {}

fn guard_unlock(g: relock::LockGuard) {
    send_sync(&g.unlock());
}

fn quorum_futures(lock: relock::QuorumLock) {
    send_sync(&lock.lock());
    send_sync(&lock.try_lock_for(Duration::ZERO));
}

fn quorum_client_shutdown(c: relock::QuorumClient) {
    send_sync(&c.shutdown());
}
