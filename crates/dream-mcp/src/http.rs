//! Streamable HTTP: the same server on a loopback address, or with TLS on any
//! address (`dream mcp --listen`).
//!
//! Before any MCP handler runs, [`Guard`] (a tower layer) refuses a request with
//! more than one `Host` or `Origin` header (400: the allowlists below read only
//! one), checks the bearer token in constant time — a request without a right
//! one gets 401 and touches nothing — and bounds in-flight requests, open
//! sessions, and the sessions each token holds (503 past them), so one token
//! cannot take every session.
//! Then rmcp's own checks run: the `Host` allowlist (loopback names, the
//! listening address, and any names the person adds) and the `Origin` allowlist
//! (this server's own origins on those hosts plus any the person adds),
//! answering 403 to a foreign `Origin`, so a browser page cannot reach the
//! server through DNS rebinding. No CORS headers are ever sent. Request bodies
//! are capped while they stream. Without TLS ([`TlsIdentity`]) only loopback
//! addresses are served, so that the token never crosses the network in clear.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use zeroize::Zeroizing;

use crate::DreamServer;
use crate::tls::TlsIdentity;

/// The environment variable a bearer token may come from.
pub const TOKEN_ENV: &str = "DREAM_MCP_TOKEN";
/// The fewest characters a bearer token may have.
pub const MIN_TOKEN_CHARS: usize = 16;
/// The most bytes a token file may hold.
const MAX_TOKEN_FILE_BYTES: u64 = 4096;
/// Default cap on a request body: the largest tool arguments plus JSON-RPC framing.
pub const DEFAULT_MAX_BODY_BYTES: usize = crate::MAX_ARGUMENT_BYTES + 64 * 1024;
/// Default cap on open MCP sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 16;
/// Default cap on the open sessions one bearer token holds: a quarter of
/// [`DEFAULT_MAX_SESSIONS`], so one client (or one leaked token) cannot take
/// them all. Give each client its own token for more.
pub const DEFAULT_MAX_SESSIONS_PER_TOKEN: usize = DEFAULT_MAX_SESSIONS / 4;
/// Default cap on requests in flight at once.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;
/// Default idle time after which a session is closed.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(600);
/// Longest wait for a request's headers (a client that trickles them is dropped).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the HTTP server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A non-loopback address without TLS.
    #[error(
        "refusing to serve MCP on {0}: without TLS only loopback addresses are served, \
         because the bearer token would cross the network in clear; give --tls-cert and \
         --tls-key, or listen on 127.0.0.1"
    )]
    NotLoopback(SocketAddr),
    /// An unusable TLS certificate or key.
    #[error("{0}")]
    Tls(String),
    /// No token, or an unusable one.
    #[error("{0}")]
    Token(String),
    /// Binding or serving failed.
    #[error("MCP over HTTP: {0}")]
    Io(#[from] std::io::Error),
}

/// The bearer token clients must present. Never shown: `Debug` prints no part of it.
#[derive(Clone)]
pub struct BearerToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// A token from its text (surrounding whitespace ignored): at least
    /// [`MIN_TOKEN_CHARS`] visible ASCII characters.
    pub fn new(text: &str) -> Result<Self, HttpError> {
        let text = text.trim();
        if text.len() < MIN_TOKEN_CHARS || !text.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(HttpError::Token(format!(
                "the bearer token must be at least {MIN_TOKEN_CHARS} visible ASCII characters \
                 (e.g. `openssl rand -hex 32`)"
            )));
        }
        Ok(BearerToken {
            digest: Sha256::digest(text.as_bytes()).into(),
        })
    }

    /// The token in [`TOKEN_ENV`], if set.
    pub fn from_env() -> Result<Option<Self>, HttpError> {
        match std::env::var(TOKEN_ENV) {
            Ok(text) => Self::new(&Zeroizing::new(text)).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(HttpError::Token(format!("{TOKEN_ENV} is not valid text")))
            }
        }
    }

    /// The token in a regular file that neither group nor others can access
    /// (mode 0600 or stricter).
    pub fn from_file(path: &Path) -> Result<Self, HttpError> {
        use std::io::Read as _;
        use std::os::unix::fs::PermissionsExt as _;
        let shown = path.display();
        let file = std::fs::File::open(path)
            .map_err(|e| HttpError::Token(format!("cannot read the token file {shown}: {e}")))?;
        let meta = file
            .metadata()
            .map_err(|e| HttpError::Token(format!("cannot read the token file {shown}: {e}")))?;
        if !meta.is_file() {
            return Err(HttpError::Token(format!(
                "the token file {shown} is not a file"
            )));
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(HttpError::Token(format!(
                "the token file {shown} has mode {mode:o}: others may read it; chmod 600 it"
            )));
        }
        let mut text = Zeroizing::new(String::new());
        file.take(MAX_TOKEN_FILE_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| HttpError::Token(format!("cannot read the token file {shown}: {e}")))?;
        Self::new(&text)
    }

    /// Whether an `Authorization` header value is `Bearer <this token>`, compared
    /// in constant time (over digests, so the length does not leak either).
    #[cfg(test)]
    fn admits(&self, authorization: Option<&[u8]>) -> bool {
        bool::from(presented(authorization).ct_eq(&self.digest))
    }
}

/// The digest of the token an `Authorization` header value presents.
fn presented(authorization: Option<&[u8]>) -> [u8; 32] {
    let presented = authorization
        .and_then(|v| v.strip_prefix(b"Bearer "))
        .unwrap_or_default();
    Sha256::digest(presented).into()
}

/// Which of `tokens` an `Authorization` header value presents: every token is
/// compared, in constant time, whichever matches.
fn admitted(tokens: &[BearerToken], authorization: Option<&[u8]>) -> Option<usize> {
    let digest = presented(authorization);
    let mut found = None;
    for (i, token) in tokens.iter().enumerate() {
        if bool::from(digest.ct_eq(&token.digest)) {
            found = Some(i);
        }
    }
    found
}

/// How the HTTP server listens and what it admits.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen: a loopback address, or any with [`HttpOptions::tls`]
    /// (port 0 picks a free port).
    pub listen: SocketAddr,
    /// The token every request must carry (or one of [`HttpOptions::extra_tokens`]).
    pub token: BearerToken,
    /// More tokens admitted besides [`HttpOptions::token`]: one per client, so
    /// each holds its own [`HttpOptions::max_sessions_per_token`] sessions.
    pub extra_tokens: Vec<BearerToken>,
    /// Serve HTTPS with this identity; without it only loopback is served.
    pub tls: Option<TlsIdentity>,
    /// Host names admitted in `Host` besides the loopback names and the
    /// listening address (e.g. the name in the certificate).
    pub extra_hosts: Vec<String>,
    /// Browser origins admitted besides the server's own origins
    /// (`scheme://host:port`).
    pub extra_origins: Vec<String>,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Most open sessions.
    pub max_sessions: usize,
    /// Most open sessions one token holds.
    pub max_sessions_per_token: usize,
    /// Most requests in flight.
    pub max_in_flight: usize,
    /// Idle time after which a session closes.
    pub session_idle: Duration,
}

impl HttpOptions {
    /// The defaults, listening on `listen` with `token`.
    pub fn new(listen: SocketAddr, token: BearerToken) -> Self {
        HttpOptions {
            listen,
            token,
            extra_tokens: Vec::new(),
            tls: None,
            extra_hosts: Vec::new(),
            extra_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_token: DEFAULT_MAX_SESSIONS_PER_TOKEN,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            session_idle: DEFAULT_SESSION_IDLE,
        }
    }
}

/// A bound server: its address, and the future that serves until cancelled.
pub struct HttpServer {
    listener: TcpListener,
    service: Guard<StreamableHttpService<DreamServer, LocalSessionManager>>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("addr", &self.listener.local_addr().ok())
            .finish_non_exhaustive()
    }
}

impl DreamServer {
    /// Binds the streamable HTTP server (see the module docs); [`HttpServer::run`]
    /// serves. Refuses a non-loopback address without TLS.
    pub async fn bind_http(self, options: HttpOptions) -> Result<HttpServer, HttpError> {
        if !options.listen.ip().is_loopback() && options.tls.is_none() {
            return Err(HttpError::NotLoopback(options.listen));
        }
        let listener = TcpListener::bind(options.listen).await?;
        let port = listener.local_addr()?.port();
        let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".into(), "::1".into()];
        let listening = options.listen.ip();
        if !listening.is_loopback() && !listening.is_unspecified() {
            hosts.push(listening.to_string());
        }
        hosts.extend(options.extra_hosts.iter().cloned());
        let scheme = if options.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let mut origins: Vec<String> = hosts
            .iter()
            .map(|host| match host.parse::<std::net::Ipv6Addr>() {
                Ok(_) => format!("{scheme}://[{host}]:{port}"),
                Err(_) => format!("{scheme}://{host}:{port}"),
            })
            .collect();
        origins.extend(options.extra_origins.iter().cloned());
        let cancel = CancellationToken::new();
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(options.max_body_bytes)
            .with_cancellation_token(cancel.child_token());
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(options.session_idle);
        let sessions = Arc::new(sessions);
        let server = self.clone();
        let mcp = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
        let mut tokens = vec![options.token];
        tokens.extend(options.extra_tokens);
        let held = Arc::new(std::sync::Mutex::new(vec![
            TokenSessions::default();
            tokens.len()
        ]));
        let auth = AuthLayer {
            tokens: tokens.into(),
            held,
            sessions,
            max_sessions: options.max_sessions,
            max_sessions_per_token: options.max_sessions_per_token,
            in_flight: Arc::new(tokio::sync::Semaphore::new(options.max_in_flight)),
        };
        let service = tower_layer::Layer::layer(&auth, mcp);
        Ok(HttpServer {
            listener,
            service,
            tls: options.tls.map(|identity| identity.acceptor()),
            cancel,
        })
    }
}

impl HttpServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Whether it serves HTTPS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// A token that stops the server when cancelled.
    pub fn cancellation(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Serves connections until cancelled.
    pub async fn run(self) -> Result<(), HttpError> {
        loop {
            let (stream, _) = tokio::select! {
                accepted = self.listener.accept() => accepted?,
                () = self.cancel.cancelled() => return Ok(()),
            };
            let service = self.service.clone();
            let cancel = self.cancel.clone();
            let tls = self.tls.clone();
            tokio::spawn(async move {
                let Some(acceptor) = tls else {
                    return serve_connection(stream, service, cancel).await;
                };
                // A client that stalls its handshake is dropped like one that
                // trickles its headers; one that fails it (plain HTTP, an
                // untrusted certificate) gets no answer at all.
                match tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => serve_connection(stream, service, cancel).await,
                    Ok(Err(e)) => tracing::debug!(error = %e, "MCP TLS handshake failed"),
                    Err(_) => tracing::debug!("MCP TLS handshake timed out"),
                }
            });
        }
    }
}

/// Serves HTTP/1.1 on one connection (plain or TLS) until it ends or the server stops.
async fn serve_connection<I>(
    io: I,
    service: Guard<StreamableHttpService<DreamServer, LocalSessionManager>>,
    cancel: CancellationToken,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper_util::service::TowerToHyperService::new(service);
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service);
    tokio::select! {
        result = connection => if let Err(e) = result {
            tracing::debug!(error = %e, "MCP HTTP connection ended");
        },
        () = cancel.cancelled() => {}
    }
}

/// The tower layer that admits a request to the MCP service (see [`Guard`]).
#[derive(Clone)]
pub struct AuthLayer {
    tokens: Arc<[BearerToken]>,
    /// The sessions each token (by its index in `tokens`) opened.
    held: Arc<std::sync::Mutex<Vec<TokenSessions>>>,
    sessions: Arc<LocalSessionManager>,
    max_sessions: usize,
    max_sessions_per_token: usize,
    in_flight: Arc<tokio::sync::Semaphore>,
}

/// The sessions one token opened (some may have closed since), and how many
/// it is opening now.
#[derive(Debug, Clone, Default)]
struct TokenSessions {
    ids: Vec<Arc<str>>,
    opening: usize,
}

/// A session a token is opening, counted against its bound until the answer
/// is in (or the request is dropped).
struct Opening {
    held: Arc<std::sync::Mutex<Vec<TokenSessions>>>,
    token: usize,
}

impl Opening {
    /// Records the session the answer opened, if any, as the token's.
    fn opened(self, session: Option<&header::HeaderValue>) {
        let id = session.and_then(|v| v.to_str().ok());
        if let (Some(id), Ok(mut held)) = (id, self.held.lock()) {
            held[self.token].ids.push(Arc::from(id));
        }
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        if let Ok(mut held) = self.held.lock() {
            held[self.token].opening -= 1;
        }
    }
}

impl AuthLayer {
    /// Counts a session `token` is about to open against the bounds: every
    /// token's, then its own (what it opened and still holds, and what it is
    /// opening now).
    async fn reserve(&self, token: usize) -> Result<Opening, &'static str> {
        let live = self.sessions.sessions.read().await;
        let Ok(mut held) = self.held.lock() else {
            return Err("the session table is unavailable\n");
        };
        let opening: usize = held.iter().map(|t| t.opening).sum();
        if live.len() + opening >= self.max_sessions {
            return Err("too many open sessions\n");
        }
        let mine = &mut held[token];
        mine.ids.retain(|id| live.contains_key(id));
        if mine.ids.len() + mine.opening >= self.max_sessions_per_token {
            return Err(
                "too many open sessions for this token (close one, or give each client \
                        its own token)\n",
            );
        }
        mine.opening += 1;
        Ok(Opening {
            held: self.held.clone(),
            token,
        })
    }
}

impl<S> tower_layer::Layer<S> for AuthLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            inner,
            layer: self.clone(),
        }
    }
}

/// Checks the bearer token before anything else (401, nothing touched), then
/// the in-flight and session bounds (503), then hands the request on.
#[derive(Clone)]
pub struct Guard<S> {
    inner: S,
    layer: AuthLayer,
}

/// The response body every layer here speaks.
type Body = BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
    }
    response
}

impl<S, B> tower_service::Service<Request<B>> for Guard<S>
where
    S: tower_service::Service<Request<B>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // The Host and Origin allowlists read one header each: a request that
        // carries two (the first allowed, the second not) is refused whole.
        let headers = request.headers();
        if headers.get_all(header::HOST).iter().count() > 1
            || headers.get_all(header::ORIGIN).iter().count() > 1
        {
            return Box::pin(async {
                Ok(plain(
                    StatusCode::BAD_REQUEST,
                    "a request may carry one Host header and at most one Origin header\n",
                ))
            });
        }
        let authorization = headers.get(header::AUTHORIZATION).map(|v| v.as_bytes());
        let Some(token) = admitted(&self.layer.tokens, authorization) else {
            return Box::pin(async {
                Ok(plain(
                    StatusCode::UNAUTHORIZED,
                    "a bearer token is required (Authorization: Bearer …)\n",
                ))
            });
        };
        let Ok(permit) = self.layer.in_flight.clone().try_acquire_owned() else {
            return Box::pin(async {
                Ok(plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many requests in flight\n",
                ))
            });
        };
        let opens_session = request.method() == http::Method::POST
            && !request.headers().contains_key("mcp-session-id");
        // The service that was polled ready handles this request; a clone takes
        // its place for the next one.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let layer = self.layer.clone();
        Box::pin(async move {
            let opening = if opens_session {
                match layer.reserve(token).await {
                    Ok(opening) => Some(opening),
                    Err(refusal) => return Ok(plain(StatusCode::SERVICE_UNAVAILABLE, refusal)),
                }
            } else {
                None
            };
            let response = inner.call(request).await;
            if let (Some(opening), Ok(response)) = (opening, &response) {
                opening.opened(response.headers().get("mcp-session-id"));
            }
            drop(permit);
            response
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_compared_whole_and_never_shown() {
        let token = BearerToken::new("  correct-horse-battery-staple\n").unwrap();
        assert!(token.admits(Some(b"Bearer correct-horse-battery-staple")));
        for wrong in [
            &b"Bearer correct-horse-battery-stapl"[..],
            b"Bearer correct-horse-battery-staple ",
            b"bearer correct-horse-battery-staple",
            b"correct-horse-battery-staple",
            b"Bearer ",
            b"",
        ] {
            assert!(
                !token.admits(Some(wrong)),
                "{}",
                String::from_utf8_lossy(wrong)
            );
        }
        assert!(!token.admits(None));
        let other = BearerToken::new("another-token-0123456789").unwrap();
        let both = [token.clone(), other];
        assert_eq!(
            admitted(&both, Some(b"Bearer another-token-0123456789")),
            Some(1)
        );
        assert_eq!(
            admitted(&both, Some(b"Bearer correct-horse-battery-staple")),
            Some(0)
        );
        assert_eq!(admitted(&both, Some(b"Bearer nobody-0123456789abc")), None);
        assert_eq!(format!("{token:?}"), "BearerToken(..)");
        assert!(BearerToken::new("short").is_err());
        assert!(BearerToken::new("sixteen chars but spaces").is_err());
    }

    #[test]
    fn a_token_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = BearerToken::from_file(&path).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        assert!(!e.to_string().contains("0123456789abcdef"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(
            BearerToken::from_file(&path)
                .unwrap()
                .admits(Some(b"Bearer 0123456789abcdef0123"))
        );
    }
}
