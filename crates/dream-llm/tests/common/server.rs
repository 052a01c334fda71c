//! A small HTTP/1.1 server on a free loopback port that replays scripted
//! replies and records every request it receives (method, path, headers, body).
//! One request per connection (`Connection: close`), which is what the
//! failure cases need: a reply can be delayed, cut off mid-body, or streamed
//! without end.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lowercased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The one value of header `name` (asserts it appears at most once).
    pub fn header(&self, name: &str) -> Option<&str> {
        let mut values = self
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str());
        let first = values.next();
        assert!(values.next().is_none(), "header {name} sent twice");
        first
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("the client sent a JSON body")
    }
}

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete response with a `Content-Length`.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Waits, then answers.
    Delayed(Duration, Box<Reply>),
    /// Declares `declared` body bytes, sends `body` (shorter), then closes.
    CutOff { declared: usize, body: String },
    /// A 200 with no length (the body ends when the connection closes),
    /// streaming `chunk`-byte pieces of JSON-ish filler up to `total` bytes.
    Stream { chunk: usize, total: usize },
}

impl Reply {
    /// A JSON response.
    pub fn json(status: u16, body: impl Into<String>) -> Self {
        Reply::Full {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
        }
    }

    /// The same reply with one more header.
    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Reply::Full {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_owned(), value.to_owned()));
                Reply::Full {
                    status,
                    headers,
                    body,
                }
            }
            other => panic!("with_header on {other:?}"),
        }
    }
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Reply>,
    requests: Vec<Recorded>,
    /// Bytes written by the last `Stream` reply once it ended.
    streamed: Option<usize>,
}

/// The running server. Dropping it stops accepting.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Starts a server on 127.0.0.1, port 0 (the OS picks a free one).
    pub async fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Mutex::new(Shared {
            script: script.into(),
            ..Shared::default()
        }));
        let state = Arc::clone(&shared);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(serve(stream, Arc::clone(&state)));
            }
        });
        Self { addr, shared, task }
    }

    /// `http://127.0.0.1:PORT` followed by `path` (for example `/v1`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().unwrap().requests.clone()
    }

    /// Waits until a `Stream` reply has ended; returns the bytes it wrote.
    pub async fn streamed(&self) -> usize {
        for _ in 0..500 {
            if let Some(n) = self.shared.lock().unwrap().streamed {
                return n;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the streamed reply did not end within 5 s");
    }
}

async fn serve(mut stream: TcpStream, shared: Arc<Mutex<Shared>>) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let reply = {
        let mut shared = shared.lock().unwrap();
        shared.requests.push(request);
        shared.script.pop_front()
    };
    let reply = reply.unwrap_or_else(|| {
        Reply::json(
            599,
            r#"{"error":{"message":"test server: no reply scripted","type":"test"}}"#,
        )
    });
    let _ = write_reply(&mut stream, reply, &shared).await;
}

async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        assert!(buf.len() < 1 << 20, "request head too large");
    };
    let head = std::str::from_utf8(&buf[..head_end]).expect("ASCII request head");
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap().split(' ');
    let method = request_line.next().unwrap().to_owned();
    let path = request_line.next().unwrap().to_owned();
    assert_eq!(request_line.next(), Some("HTTP/1.1"));
    let headers: Vec<(String, String)> = lines
        .map(|line| {
            let (name, value) = line.split_once(':').expect("header line");
            (name.trim().to_ascii_lowercase(), value.trim().to_owned())
        })
        .collect();
    assert!(
        !headers.iter().any(|(n, _)| n == "transfer-encoding"),
        "the client is expected to send a Content-Length body"
    );
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().expect("numeric content-length"));
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    assert_eq!(body.len(), length, "body longer than its Content-Length");
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

async fn write_reply(
    stream: &mut TcpStream,
    reply: Reply,
    shared: &Arc<Mutex<Shared>>,
) -> std::io::Result<()> {
    match reply {
        Reply::Delayed(delay, inner) => {
            tokio::time::sleep(delay).await;
            Box::pin(write_reply(stream, *inner, shared)).await
        }
        Reply::Full {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!(
                "content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            ));
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
            stream.shutdown().await
        }
        Reply::CutOff { declared, body } => {
            assert!(declared > body.len());
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {declared}\r\nconnection: close\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
            stream.shutdown().await
        }
        Reply::Stream { chunk, total } => {
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
            let mut written = 0;
            let outcome = async {
                stream.write_all(head.as_bytes()).await?;
                stream.write_all(b"{\"filler\":\"").await?;
                let piece = vec![b'x'; chunk];
                while written < total {
                    stream.write_all(&piece).await?;
                    written += chunk;
                }
                stream.write_all(b"\"}").await?;
                stream.shutdown().await
            }
            .await;
            shared.lock().unwrap().streamed = Some(written);
            outcome
        }
    }
}
