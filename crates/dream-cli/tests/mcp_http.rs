//! `dream mcp --listen` end to end: the built binary on a loopback port, driven
//! with plain HTTP/1.1 so every header is the test's choice. A request
//! without the right bearer token gets 401 and changes nothing; a foreign
//! `Origin` or `Host` gets 403; non-loopback addresses and missing or exposed
//! tokens are refused at start; the token never appears in the output.
//! With `--tls-cert`/`--tls-key` (a throwaway CA made by the `openssl` CLI) the
//! same checks hold over HTTPS, on a non-loopback address too; a client that
//! does not trust the CA, and plain HTTP to the TLS port, get nowhere.

use std::io::{BufRead as _, BufReader, Read, Write};
use std::process::{Child, Stdio};
use std::sync::Arc;

use dream_conformance::tls::TestCa;

use serde_json::{Value, json};

mod common;
use common::*;

const TOKEN: &str = "test-token-0123456789abcdef";
const PROTOCOL: &str = "2025-06-18";

struct Server {
    child: Child,
    port: u16,
    /// Speak TLS with this client configuration (expecting `localhost`).
    tls: Option<Arc<rustls::ClientConfig>>,
}

/// A byte stream a request goes over: plain TCP or TLS over it.
trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

impl Server {
    fn connect(&self) -> Box<dyn Stream> {
        let tcp = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        match &self.tls {
            None => Box::new(tcp),
            Some(config) => {
                let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
                let tls = rustls::ClientConnection::new(config.clone(), name).unwrap();
                Box::new(rustls::StreamOwned::new(tls, tcp))
            }
        }
    }

    fn host(&self) -> String {
        match self.tls {
            None => format!("127.0.0.1:{}", self.port),
            Some(_) => format!("localhost:{}", self.port),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(cli: &Cli) -> Server {
    start_with(cli, &["mcp", "--listen", "127.0.0.1:0"], None)
}

fn start_with(cli: &Cli, args: &[&str], tls: Option<Arc<rustls::ClientConfig>>) -> Server {
    let mut child = cli
        .command(args)
        .env("DREAM_MCP_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dream mcp --listen");
    let mut line = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    // Keep reading its log, so the server never writes into a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    assert!(!line.contains(TOKEN), "{line}");
    let url = line
        .trim()
        .strip_prefix("serving MCP on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_owned();
    let port = url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    Server { child, port, tls }
}

/// One JSON-RPC POST over a fresh connection (plain HTTP/1.1, so every header is
/// the test's choice); returns the status, the session header and the JSON-RPC
/// answer (from a JSON or an SSE body), if any.
fn post(
    server: &Server,
    body: Value,
    token: Option<&str>,
    session: Option<&str>,
    extra: &[(&str, &str)],
) -> (u16, Option<String>, Option<Value>) {
    let body = body.to_string();
    let mut head = String::from("POST /mcp HTTP/1.1\r\n");
    let host = server.host();
    let mut headers: Vec<(&str, &str)> = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", PROTOCOL),
        ("connection", "close"),
    ];
    if !extra.iter().any(|(n, _)| *n == "host") {
        headers.push(("host", &host));
    }
    let bearer = token.map(|t| format!("Bearer {t}"));
    if let Some(bearer) = &bearer {
        headers.push(("authorization", bearer));
    }
    if let Some(session) = session {
        headers.push(("mcp-session-id", session));
    }
    headers.extend_from_slice(extra);
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut stream = server.connect();
    // One write, so a server that answers without reading the body does not
    // reset the connection under its own answer; a refused oversize body may
    // still close it before all of it is sent.
    let _ = stream.write_all(format!("{head}{body}").as_bytes());
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    // No status line: the server closed the connection without an answer.
    let status = head.split(' ').nth(1).map_or(0, |s| s.parse().unwrap());
    let header = |name: &str| {
        head.lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    };
    assert!(header("access-control-allow-origin").is_none(), "{head}");
    let body = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let answer = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(body.as_str()))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some());
    (status, header("mcp-session-id"), answer)
}

/// A chunked body's content.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "dream-test", "version": "0"}}})
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

fn open_session(server: &Server) -> String {
    let (status, session, answer) = post(server, initialize(), Some(TOKEN), None, &[]);
    assert_eq!(status, 200, "{answer:?}");
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(server, initialized, Some(TOKEN), Some(&session), &[]);
    assert_eq!(status, 202);
    session
}

fn sessions_logged(cli: &Cli) -> u64 {
    // The server makes its store at its first write: none yet, nothing logged.
    if !cli.dir.path().join(".dream").exists() {
        return 0;
    }
    let stats: Value = serde_json::from_str(&ok(cli.run(&["stats", "--json"]))).unwrap();
    stats["logged_sessions"].as_u64().unwrap()
}

#[test]
fn only_the_right_token_from_a_local_origin_reaches_the_tools() {
    let cli = Cli::new();
    let server = start(&cli);
    let log = |id| {
        call(
            id,
            "log_session",
            json!({"messages": [{"role": "user", "content": "Call me Sam."}]}),
        )
    };

    // No token, a wrong one, a wrong scheme: 401 before anything runs.
    for token in [None, Some("test-token-0123456789abcdeX"), Some("")] {
        let (status, session, _) = post(&server, initialize(), token, None, &[]);
        assert_eq!((status, session), (401, None), "{token:?}");
    }
    let session = open_session(&server);
    let (status, _, _) = post(
        &server,
        log(2),
        Some("wrong-token-0123456789abc"),
        Some(&session),
        &[],
    );
    assert_eq!(status, 401);
    let (status, _, _) = post(&server, log(3), None, Some(&session), &[]);
    assert_eq!(status, 401);
    assert_eq!(
        sessions_logged(&cli),
        0,
        "an unauthorised call touched the store"
    );

    // A foreign Origin (a web page) or Host (DNS rebinding): 403, even with the token.
    let (status, _, _) = post(
        &server,
        log(4),
        Some(TOKEN),
        Some(&session),
        &[("origin", "https://evil.example")],
    );
    assert_eq!(status, 403);
    let (status, _, _) = post(
        &server,
        initialize(),
        Some(TOKEN),
        None,
        &[("host", "evil.example")],
    );
    assert_eq!(status, 403);
    assert_eq!(sessions_logged(&cli), 0);

    // The server's own origin and the right token: a full round trip.
    let own = format!("http://127.0.0.1:{}", server.port);
    let (status, _, answer) = post(
        &server,
        log(5),
        Some(TOKEN),
        Some(&session),
        &[("origin", &own)],
    );
    assert_eq!(status, 200, "{answer:?}");
    assert_eq!(sessions_logged(&cli), 1);
    // What the agent logged is its report; the person's word comes from the
    // terminal (or the harness's transcript file).
    cli.log("Call me Sam.");
    let (_, _, answer) = post(
        &server,
        call(6, "dream", json!({"force": true})),
        Some(TOKEN),
        Some(&session),
        &[],
    );
    let created = tool_json(&answer.unwrap()["result"])["created"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, _, answer) = post(
        &server,
        call(7, "recall", json!({"query": "what is the user called"})),
        Some(TOKEN),
        Some(&session),
        &[],
    );
    let records = tool_json(&answer.unwrap()["result"])["records"].clone();
    assert!(
        records
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == created.as_str() && r["verdict"] == "used"),
        "{records}"
    );

    // An oversize body is refused while it streams.
    let huge = call(
        8,
        "log_session",
        json!({"messages": [{"role": "user", "content": "x".repeat(2 * 1024 * 1024)}]}),
    );
    let (status, _, _) = post(&server, huge, Some(TOKEN), Some(&session), &[]);
    // 413, or the connection reset under it when the server stops reading.
    assert!(status == 413 || status == 0, "{status}");
    assert_eq!(sessions_logged(&cli), 2);
}

#[test]
fn unsafe_listening_is_refused_at_start() {
    use std::os::unix::fs::PermissionsExt as _;
    let cli = Cli::new();
    let wide = cli.run_with(
        &["mcp", "--listen", "0.0.0.0:0"],
        None,
        &[("DREAM_MCP_TOKEN", TOKEN)],
    );
    code(&wide, 2);
    assert!(
        stderr(&wide).contains("without TLS only loopback addresses"),
        "{}",
        stderr(&wide)
    );
    let bare = cli.run(&["mcp", "--listen", "127.0.0.1:0"]);
    code(&bare, 2);
    assert!(
        stderr(&bare).contains("needs a bearer token"),
        "{}",
        stderr(&bare)
    );
    std::fs::write(cli.path("token"), TOKEN).unwrap();
    std::fs::set_permissions(cli.path("token"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let exposed = cli.run(&["mcp", "--listen", "127.0.0.1:0", "--token-file", "token"]);
    code(&exposed, 2);
    assert!(
        stderr(&exposed).contains("chmod 600"),
        "{}",
        stderr(&exposed)
    );
    for out in [&wide, &bare, &exposed] {
        assert!(!stderr(out).contains(TOKEN));
    }
    // No flag takes the token itself.
    let flag = cli.run(&["mcp", "--listen", "127.0.0.1:0", "--token", TOKEN]);
    code(&flag, 2);
}

/// A client configuration trusting only `ca`'s certificate.
fn trusting(ca: &TestCa) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_file_iter(&ca.cert).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

#[test]
fn over_tls_the_same_checks_hold_and_only_a_client_trusting_the_ca_gets_in() {
    use std::os::unix::fs::PermissionsExt as _;
    let cli = Cli::new();
    let Some(ca) = TestCa::new(cli.dir.path(), "ca").unwrap() else {
        eprintln!("skipped: no openssl CLI to make a throwaway CA");
        return;
    };
    let issued = ca
        .issue("server", &["DNS:localhost", "IP:127.0.0.1"])
        .unwrap();
    let (cert, key) = (issued.cert.to_str().unwrap(), issued.key.to_str().unwrap());

    // A key file others can read is refused, and the key never echoed.
    let open_key = cli.path("open.key");
    std::fs::copy(&issued.key, &open_key).unwrap();
    std::fs::set_permissions(&open_key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let exposed = cli.run_with(
        &[
            "mcp",
            "--listen",
            "0.0.0.0:0",
            "--tls-cert",
            cert,
            "--tls-key",
            "open.key",
        ],
        None,
        &[("DREAM_MCP_TOKEN", TOKEN)],
    );
    code(&exposed, 2);
    assert!(
        stderr(&exposed).contains("chmod 600"),
        "{}",
        stderr(&exposed)
    );
    assert!(
        !stderr(&exposed).contains("PRIVATE KEY"),
        "{}",
        stderr(&exposed)
    );
    // A certificate alone is not TLS.
    let half = cli.run_with(
        &["mcp", "--listen", "0.0.0.0:0", "--tls-cert", cert],
        None,
        &[("DREAM_MCP_TOKEN", TOKEN)],
    );
    code(&half, 2);

    // With TLS a non-loopback address is served.
    let args = [
        "mcp",
        "--listen",
        "0.0.0.0:0",
        "--tls-cert",
        cert,
        "--tls-key",
        key,
    ];
    let server = start_with(&cli, &args, Some(trusting(&ca)));
    for token in [None, Some("test-token-0123456789abcdeX")] {
        let (status, session, _) = post(&server, initialize(), token, None, &[]);
        assert_eq!((status, session), (401, None), "{token:?}");
    }
    let session = open_session(&server);
    let log = call(
        2,
        "log_session",
        json!({"messages": [{"role": "user", "content": "Call me Sam."}]}),
    );
    let foreign = [("origin", "https://evil.example")];
    let (status, _, _) = post(&server, log.clone(), Some(TOKEN), Some(&session), &foreign);
    assert_eq!(status, 403);
    // The plain-HTTP origin of the same port is not this server's.
    let plain_origin = format!("http://localhost:{}", server.port);
    let (status, _, _) = post(
        &server,
        log.clone(),
        Some(TOKEN),
        Some(&session),
        &[("origin", &plain_origin)],
    );
    assert_eq!(status, 403);
    assert_eq!(sessions_logged(&cli), 0);
    let own = format!("https://localhost:{}", server.port);
    let (status, _, answer) = post(
        &server,
        log,
        Some(TOKEN),
        Some(&session),
        &[("origin", &own)],
    );
    assert_eq!(status, 200, "{answer:?}");
    assert_eq!(sessions_logged(&cli), 1);

    // A client that does not trust the CA fails its handshake.
    let other = TestCa::new(cli.dir.path(), "other").unwrap().unwrap();
    let mut tls = rustls::ClientConnection::new(
        trusting(&other),
        rustls::pki_types::ServerName::try_from("localhost").unwrap(),
    )
    .unwrap();
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let refused = tls.complete_io(&mut tcp).unwrap_err();
    let reason = refused
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
        .cloned();
    assert_eq!(
        reason,
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer
        )),
        "{refused}"
    );

    // Plain HTTP to the TLS port gets no HTTP answer, and nothing runs.
    let mut plain = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    plain
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {TOKEN}\r\n\
         content-type: application/json\r\ncontent-length: 2\r\n\r\n{{}}",
        server.host()
    );
    let _ = plain.write_all(request.as_bytes());
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(sessions_logged(&cli), 1);
}

#[test]
fn sessions_past_the_bound_are_refused_and_the_open_ones_keep_working() {
    use dream_mcp::http::{DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_TOKEN};
    let cli = Cli::new();
    // One token per client: enough clients to fill every session, and one more.
    let clients = DEFAULT_MAX_SESSIONS / DEFAULT_MAX_SESSIONS_PER_TOKEN + 1;
    let tokens: Vec<String> = (0..clients)
        .map(|i| format!("client-{i}-token-0123456789abcdef"))
        .collect();
    let files: Vec<String> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| token_file(&cli, &format!("token-{i}"), t))
        .collect();
    let mut args = vec!["mcp", "--listen", "127.0.0.1:0"];
    for file in &files {
        args.extend(["--token-file", file.as_str()]);
    }
    let server = start_with(&cli, &args, None);
    let mut open = Vec::new();
    for token in &tokens[..clients - 1] {
        for _ in 0..DEFAULT_MAX_SESSIONS_PER_TOKEN {
            let (status, session, answer) = post(&server, initialize(), Some(token), None, &[]);
            assert_eq!(status, 200, "{answer:?}");
            open.push((token.clone(), session.unwrap()));
        }
    }
    assert_eq!(open.len(), DEFAULT_MAX_SESSIONS);
    // The last client's token holds nothing, yet every session is taken.
    let (status, session, _) = post(&server, initialize(), Some(&tokens[clients - 1]), None, &[]);
    assert_eq!((status, session), (503, None));
    let (token, first) = &open[0];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(&server, initialized, Some(token), Some(first), &[]);
    assert_eq!(status, 202);
    let (status, _, answer) = post(
        &server,
        call(2, "stats", json!({})),
        Some(token),
        Some(first),
        &[],
    );
    assert_eq!(status, 200, "{answer:?}");
    assert!(tool_json(&answer.unwrap()["result"])["memories"].is_number());
}

/// A request with several `Host` headers (the first one allowed, or all of
/// them the same) gets 400 before anything runs; so do several `Origin`s.
#[test]
fn several_host_or_origin_headers_get_400() {
    let cli = Cli::new();
    let server = start(&cli);
    let host = server.host();
    let origin = format!("http://{host}");
    for extra in [
        vec![("host", host.as_str()), ("host", "evil.example")],
        vec![("host", "evil.example"), ("host", host.as_str())],
        vec![("host", host.as_str()), ("host", host.as_str())],
        vec![
            ("origin", origin.as_str()),
            ("origin", "http://evil.example"),
        ],
    ] {
        let (status, session, answer) = post(&server, initialize(), Some(TOKEN), None, &extra);
        assert_eq!((status, session), (400, None), "{extra:?}: {answer:?}");
    }
    // Still serving; one Host is fine.
    open_session(&server);
    assert_eq!(sessions_logged(&cli), 0);
}

/// A token file of mode 0600 holding `token`.
fn token_file(cli: &Cli, name: &str, token: &str) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let path = cli.config.path().join(name);
    std::fs::write(&path, token).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path.to_string_lossy().into_owned()
}

/// One bearer token cannot hold every session: past its own bound its next
/// session is refused (503) while another token still opens one, and the
/// sessions it holds keep working.
#[test]
fn one_token_cannot_hold_every_session() {
    let cli = Cli::new();
    const OTHER: &str = "other-token-0123456789abcdef";
    let first = token_file(&cli, "first", TOKEN);
    let second = token_file(&cli, "second", OTHER);
    let server = start_with(
        &cli,
        &[
            "mcp",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            &first,
            "--token-file",
            &second,
        ],
        None,
    );
    let mut held = Vec::new();
    loop {
        let (status, session, answer) = post(&server, initialize(), Some(TOKEN), None, &[]);
        if status != 200 {
            assert_eq!((status, session), (503, None), "{answer:?}");
            break;
        }
        held.push(session.expect("a session id"));
        assert!(
            held.len() < dream_mcp::http::DEFAULT_MAX_SESSIONS,
            "one token opened all {} sessions",
            held.len()
        );
    }
    assert!(!held.is_empty());
    let (status, session, answer) = post(&server, initialize(), Some(OTHER), None, &[]);
    assert_eq!(status, 200, "{answer:?}");
    assert!(session.is_some());
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(&server, initialized, Some(TOKEN), Some(&held[0]), &[]);
    assert_eq!(status, 202);
    let (status, _, answer) = post(
        &server,
        call(2, "stats", json!({})),
        Some(TOKEN),
        Some(&held[0]),
        &[],
    );
    assert_eq!(status, 200, "{answer:?}");
}
