use super::*;

fn refused(text: &str) -> StoreUrlError {
    match StoreUrl::parse(text) {
        Ok(url) => panic!("{text:?} parsed: {url:?}"),
        Err(e) => e,
    }
}

fn server(url: &StoreUrl) -> &ServerUrl {
    match url.place() {
        Place::Redis(server) | Place::Postgres(server) => server,
        other => panic!("not a server: {other:?}"),
    }
}

#[test]
fn unknown_and_malformed_urls_say_what_is_expected() {
    for text in [
        "",
        "ftp:somewhere",
        "localhost:6379",
        "redis:/host",
        "://host",
        "http://host/",
        "mysql://h/db",
        "postgresx://h",
        "redisx",
        "FS:/tmp/x",
    ] {
        let err = refused(text);
        assert!(
            matches!(err, StoreUrlError::Unknown { .. }),
            "{text}: {err:?}"
        );
        let shown = err.to_string();
        assert!(shown.starts_with("unknown store "), "{shown}");
        assert!(shown.contains("expected fs:PATH, sqlite:PATH"), "{shown}");
    }
}

#[test]
fn an_unknown_url_never_echoes_its_password() {
    let err = refused("ftp://alice:hunter2@host:21/x");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(
        shown.contains("ftp://alice:<redacted>@host:21/x"),
        "{shown}"
    );
}

#[test]
fn paths_are_not_empty() {
    assert_eq!(refused("fs:"), StoreUrlError::EmptyPath);
    assert_eq!(refused("sqlite:"), StoreUrlError::EmptyPath);
    assert_eq!(refused("fs:").to_string(), "the store path is empty");
}

#[test]
fn passwords_are_refused_and_never_shown() {
    let cases = [
        ("redis://:hunter2@127.0.0.1:6379/0", Backend::Redis),
        ("redis://user:hunter2@host", Backend::Redis),
        ("rediss://u:hunter2@host:6380/1?prefix=p", Backend::Redis),
        ("valkey://:hunter2@host", Backend::Redis),
        ("valkeys://u:hunter2@host", Backend::Redis),
        (
            "postgres://dream:hunter2@127.0.0.1:5432/test",
            Backend::Postgres,
        ),
        ("postgresql://u:hunter2@h/db?schema=s", Backend::Postgres),
        (
            "postgres://h/db?sslmode=disable&password=hunter2",
            Backend::Postgres,
        ),
        ("postgres?schema=s&password=hunter2", Backend::Postgres),
    ];
    for (text, backend) in cases {
        let err = refused(text);
        assert_eq!(err, StoreUrlError::Password { backend }, "{text}");
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        let env = backend.url_env().unwrap();
        assert!(shown.contains(env), "{shown}");
        assert!(
            shown.contains(&format!("--store {}", backend.feature())),
            "{shown}"
        );
    }
    // A user alone is no password.
    assert!(StoreUrl::parse("redis://user@host:6379").is_ok());
    assert!(StoreUrl::parse("postgres://u@h/db").is_ok());
}

#[test]
fn queries_take_only_the_stores_own_parameter() {
    for text in [
        "redis://h?password=x",
        "redis://h:1/2?db=2",
        "redis://h?prefix=p&db=1",
        "unix:///run/redis.sock?pass=x",
        "unix:///run/redis.sock?db=",
        "unix:///run/redis.sock?db=-1",
        "unix:///run/redis.sock?db=two",
        "redis?db=2",
        "redis?prefix=p&",
    ] {
        assert_eq!(refused(text), StoreUrlError::RedisQuery, "{text}");
    }
    let err = refused("postgres?schema=s&sslmode=verify-full");
    assert_eq!(
        err,
        StoreUrlError::ShorthandQuery {
            backend: Backend::Postgres
        }
    );
    let shown = err.to_string();
    assert!(
        shown.contains("?schema=") && shown.contains("DREAM_POSTGRES_URL"),
        "{shown}"
    );
}

#[test]
fn every_redis_scheme_the_backend_takes_is_a_redis_url() {
    for scheme in [
        "redis",
        "rediss",
        "valkey",
        "valkeys",
        "unix",
        "redis+unix",
        "valkey+unix",
        "REDIS",
    ] {
        assert_eq!(Backend::of_scheme(scheme), Some(Backend::Redis), "{scheme}");
    }
    let url = StoreUrl::parse("valkey://10.0.0.5:6379/2?prefix=team").unwrap();
    assert_eq!(url.backend(), Backend::Redis);
    assert_eq!(server(&url).connection(), Some("valkey://10.0.0.5:6379/2"));
    assert_eq!(server(&url).namespace(), Some("team"));
    assert_eq!(url.source_env(), None);
    assert_eq!(url.to_string(), "valkey://10.0.0.5:6379/2?prefix=team");
    let unix = StoreUrl::parse("unix:///run/redis.sock").unwrap();
    assert_eq!(server(&unix).connection(), Some("unix:///run/redis.sock"));
}

#[test]
fn a_unix_socket_takes_its_database_number_in_the_query() {
    for scheme in ["unix", "redis+unix", "Valkey+Unix"] {
        let url = StoreUrl::parse(&format!("{scheme}:///run/r.sock?db=3&prefix=team")).unwrap();
        assert_eq!(
            server(&url).connection().map(str::to_owned),
            Some(format!("{scheme}:///run/r.sock?db=3"))
        );
        assert_eq!(server(&url).namespace(), Some("team"));
    }
    // Two databases behind one socket are two stores, with two seal keys.
    let three = StoreUrl::parse("unix:///run/r.sock?db=3").unwrap();
    let four = StoreUrl::parse("unix:///run/r.sock?db=4").unwrap();
    assert_eq!(three.locator().as_deref(), Some("unix:///run/r.sock?db=3"));
    assert_eq!(four.locator().as_deref(), Some("unix:///run/r.sock?db=4"));
    // Over TCP the database is the path: a `db=` there would be a second answer.
    let err = refused("redis://h:6379?db=2").to_string();
    assert!(err.contains("redis://host:port/N"), "{err}");
}

#[test]
fn postgres_urls_split_their_schema_and_keep_the_rest() {
    for scheme in ["postgres", "postgresql", "PostgreSQL"] {
        assert_eq!(Backend::of_scheme(scheme), Some(Backend::Postgres));
    }
    let url = StoreUrl::parse("postgres://u@h:5/db?schema=team&sslmode=disable").unwrap();
    assert_eq!(
        server(&url).connection(),
        Some("postgres://u@h:5/db?sslmode=disable")
    );
    assert_eq!(server(&url).namespace(), Some("team"));
    let plain = StoreUrl::parse("postgresql://h/db?&schema=s&").unwrap();
    assert_eq!(server(&plain).connection(), Some("postgresql://h/db"));
}

#[test]
fn paths_parse_relative_or_absolute_and_move() {
    let url = StoreUrl::parse("fs:rel/dream").unwrap();
    assert_eq!(url.backend(), Backend::Fs);
    assert_eq!(url.path(), Some(Path::new("rel/dream")));
    assert!(url.path().unwrap().is_relative());
    assert_eq!(url.locator(), None);
    let moved = url.moved_to("/srv/proj/rel/dream");
    assert_eq!(moved.to_string(), "fs:/srv/proj/rel/dream");
    let db = StoreUrl::parse("sqlite:/var/mem.db").unwrap();
    assert_eq!(db.place(), &Place::Sqlite(PathBuf::from("/var/mem.db")));
    assert_eq!(db.moved_to("/x.db").to_string(), "sqlite:/x.db");
    let redis = StoreUrl::parse("redis://h").unwrap();
    assert_eq!(redis.moved_to("/x"), redis);
}

#[test]
fn shorthands_read_their_url_from_the_environment_or_a_file() {
    let url = StoreUrl::parse("redis?prefix=p").unwrap();
    assert_eq!(url.source_env(), Some(REDIS_URL_ENV));
    assert_eq!(server(&url).connection(), None);
    assert_eq!(server(&url).namespace(), Some("p"));
    assert_eq!(url.locator(), None, "unresolved: no locator yet");
    let resolved = url.resolve("redis://:hunter2@10.0.0.5:6379/0");
    assert_eq!(resolved.source_env(), None);
    assert_eq!(
        server(&resolved).connection(),
        Some("redis://:hunter2@10.0.0.5:6379/0")
    );
    assert_eq!(resolved.to_string(), "redis?prefix=p");
    let shown = format!("{resolved} {resolved:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert_eq!(
        resolved.locator().as_deref(),
        Some("redis://10.0.0.5:6379/0?prefix=p")
    );
    let pg = StoreUrl::parse("postgres").unwrap();
    assert_eq!(pg.source_env(), Some(POSTGRES_URL_ENV));
    let bare = StoreUrl::parse("postgres?").unwrap();
    assert_eq!(bare.source_env(), Some(POSTGRES_URL_ENV));
    assert_eq!(
        StoreUrl::parse("fs:/x")
            .unwrap()
            .resolve("redis://h")
            .to_string(),
        "fs:/x"
    );
}

#[test]
fn locators_never_hold_a_password_and_name_postgres_once() {
    let pg = StoreUrl::parse("postgres?schema=team")
        .unwrap()
        .resolve("postgresql://alice:hunter2@db.example:5432/mem");
    assert_eq!(
        pg.locator().as_deref(),
        Some("postgres://db.example:5432/mem?schema=team")
    );
    let pg = StoreUrl::parse("postgres?schema=team")
        .unwrap()
        .resolve("postgres://alice:hunter2@db/mem?sslmode=verify-full");
    assert_eq!(
        pg.locator().as_deref(),
        Some("postgres://db/mem?sslmode=verify-full&schema=team")
    );
    let given = StoreUrl::parse("postgres://u@h:5/db?schema=team&sslmode=disable").unwrap();
    assert_eq!(
        given.locator().as_deref(),
        Some("postgres://h:5/db?schema=team&sslmode=disable")
    );
    let redis = StoreUrl::parse("redis")
        .unwrap()
        .resolve("redis://user:pw@host");
    assert_eq!(redis.locator().as_deref(), Some("redis://host"));
    let unix = StoreUrl::parse("unix:///run/redis.sock").unwrap();
    assert_eq!(unix.locator().as_deref(), Some("unix:///run/redis.sock"));
    for (given, redis) in [
        ("valkey://h:6379/0?prefix=p", "redis://h:6379/0?prefix=p"),
        ("VALKEYS://u@h:6380", "rediss://h:6380"),
        ("valkey+unix:///run/v.sock", "redis+unix:///run/v.sock"),
        ("PostgreSQL://h/db", "postgres://h/db"),
    ] {
        let url = StoreUrl::parse(given).unwrap();
        assert_eq!(url.locator().as_deref(), Some(redis), "{given}");
    }
}
