//! A raw TCP server on loopback for misbehaviour a real HTTP server library
//! will not produce: lying Content-Length, resets mid-body, headers sent one
//! byte at a time, bytes smuggled after a response. Each request is answered
//! by a script of [`Step`]s chosen from its path; connections are kept alive
//! between scripts unless a step ends them.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One step of an answer.
#[derive(Clone, Debug)]
pub enum Step {
    /// Write these bytes.
    Send(Vec<u8>),
    /// Write these bytes one at a time, pausing between them.
    Trickle(Vec<u8>, Duration),
    /// Wait.
    Sleep(Duration),
    /// Abort the connection with a TCP reset.
    Reset,
    /// Close the connection normally.
    Close,
}

/// The script for a request path (with query).
pub type Handler = dyn Fn(&str) -> Vec<Step> + Send + Sync;

/// A running raw server; stops when dropped.
pub struct RawServer {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    accepted: Arc<Mutex<usize>>,
    task: JoinHandle<()>,
}

impl RawServer {
    /// Listens on `bind` (e.g. `127.0.0.1:0` or `[::1]:0`).
    pub async fn start(bind: &str, handler: Arc<Handler>) -> std::io::Result<RawServer> {
        let listener = TcpListener::bind(bind).await?;
        let addr = listener.local_addr()?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(Mutex::new(0));
        let (log2, accepted2) = (Arc::clone(&log), Arc::clone(&accepted));
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                *accepted2.lock().unwrap() += 1;
                let (handler, log) = (Arc::clone(&handler), Arc::clone(&log2));
                tokio::spawn(async move {
                    let _ = serve(stream, handler, log).await;
                });
            }
        });
        Ok(RawServer {
            addr,
            log,
            accepted,
            task,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Request paths received, in order.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// TCP connections accepted (a refused destination never gets one).
    pub fn connections(&self) -> usize {
        *self.accepted.lock().unwrap()
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut stream: TcpStream,
    handler: Arc<Handler>,
    log: Arc<Mutex<Vec<String>>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    loop {
        // Read one request head.
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            if buf.len() > 64 * 1024 {
                return Ok(());
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        buf.drain(..head_end);
        let path = head
            .lines()
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .unwrap_or("/")
            .to_string();
        log.lock().unwrap().push(path.clone());
        for step in handler(&path) {
            match step {
                Step::Send(bytes) => stream.write_all(&bytes).await?,
                Step::Trickle(bytes, every) => {
                    for b in bytes {
                        stream.write_all(&[b]).await?;
                        tokio::time::sleep(every).await;
                    }
                }
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::Reset => {
                    stream.set_zero_linger()?;
                    return Ok(());
                }
                Step::Close => {
                    stream.shutdown().await?;
                    return Ok(());
                }
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A complete, honest response.
pub fn respond(status: &str, content_type: &str, body: &[u8]) -> Vec<Step> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    vec![Step::Send(out)]
}

/// A response head with the given extra header lines, no body yet.
pub fn head(status: &str, headers: &[String]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for h in headers {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}
