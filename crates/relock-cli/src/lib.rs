//! The `relock` command's shared parts, as a library so that the bench lab (`relock-bench`,
//! which is not published) can reuse them. The command itself is `src/main.rs`; this is not a
//! stable API.
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms)]

pub mod shared;
