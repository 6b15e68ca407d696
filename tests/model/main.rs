//! Every script against a model: for each kind, a reference model in Rust of what it keeps in
//! Redis, and a property test that drives random sequences of its operations (with time
//! passing, expiries, empty restarts and keys written over by other programs) through the real
//! scripts on a real server and through the model, comparing replies, published messages, and
//! every key with its value and time to live after every step. A failure is shrunk to a short
//! sequence.
//!
//! `MODEL_CASES=N` sets the cases per kind (the default keeps each kind to a few seconds).
//! Each kind's `*_mutants_are_caught` test shows that its property fails on a one-character
//! change to each script's main comparison and on a changed TTL (`mutants`).

mod bench;
mod mutants;
mod run;
mod shape;
mod world;

mod election;
mod fair_before_after;
mod fair_lock;
mod fenced;
mod guarded;
mod job;
mod latch;
mod permits;
mod plain_batch;
mod plain_lock;
mod quorum;
mod rw_lock;
mod semaphore;
