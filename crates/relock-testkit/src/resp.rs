//! A minimal synchronous RESP2 client, so the kit can check and poke servers without an async
//! client of its own (and from `Drop`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `+OK`
    Status(String),
    /// `-ERR ...`
    Error(String),
    /// `:42`
    Int(i64),
    /// `$..` (None for the null bulk string)
    Bulk(Option<Vec<u8>>),
    /// `*..` (None for the null array)
    Array(Option<Vec<Value>>),
}

impl Value {
    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bulk(Some(b)) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        }
    }

    /// The text of a status or bulk reply.
    pub fn as_string(&self) -> Option<String> {
        match self {
            Value::Status(s) => Some(s.clone()),
            Value::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
}

pub(crate) fn command(port: u16, args: &[&str], timeout: Duration) -> std::io::Result<Value> {
    command_as(port, None, args, timeout)
}

/// As [`command`], after `AUTH <password>` on the same connection when a password is given.
pub(crate) fn command_as(
    port: u16,
    password: Option<&str>,
    args: &[&str],
    timeout: Duration,
) -> std::io::Result<Value> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut buf = Vec::new();
    if let Some(p) = password {
        encode(&mut buf, &["AUTH", p]);
    }
    encode(&mut buf, args);
    stream.write_all(&buf)?;
    let mut reader = BufReader::new(stream);
    if password.is_some() {
        if let Value::Error(e) = read_value(&mut reader)? {
            return Ok(Value::Error(e));
        }
    }
    read_value(&mut reader)
}

fn encode(buf: &mut Vec<u8>, args: &[&str]) {
    buf.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        buf.extend_from_slice(a.as_bytes());
        buf.extend_from_slice(b"\r\n");
    }
}

fn read_value(r: &mut impl BufRead) -> std::io::Result<Value> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed",
        ));
    }
    let line = line.trim_end_matches(['\r', '\n']);
    let (tag, rest) = line.split_at(1);
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    match tag {
        "+" => Ok(Value::Status(rest.to_string())),
        "-" => Ok(Value::Error(rest.to_string())),
        ":" => rest.parse().map(Value::Int).map_err(|_| bad("bad integer")),
        "$" => {
            let len: i64 = rest.parse().map_err(|_| bad("bad length"))?;
            if len < 0 {
                return Ok(Value::Bulk(None));
            }
            let mut data = vec![0; len as usize + 2];
            r.read_exact(&mut data)?;
            data.truncate(len as usize);
            Ok(Value::Bulk(Some(data)))
        }
        "*" => {
            let len: i64 = rest.parse().map_err(|_| bad("bad length"))?;
            if len < 0 {
                return Ok(Value::Array(None));
            }
            (0..len)
                .map(|_| read_value(r))
                .collect::<Result<_, _>>()
                .map(|v| Value::Array(Some(v)))
        }
        _ => Err(bad("unknown RESP type")),
    }
}
