//! Secrets (`src/secrets.rs`): keys, tokens and connection strings found and
//! redacted, sample keys and reset links left alone.

use std::borrow::Cow;

use super::*;

#[test]
fn secrets_and_redaction() {
    let aws = format!("AKIA{}", "Q7ZRTESTFAKE2345");
    let gh = format!("ghp_{}", noise(36, 1));
    let pw = format!("Zx{}!9", noise(10, 2));
    let text = format!("key {aws} and token {gh}\npassword={pw}\n");
    let r = t().scan(&text);
    assert_eq!(r.verdict, Verdict::Secret, "{:?}", r.findings);
    let red = t().redact(&text);
    assert!(
        !red.contains(&aws) && !red.contains(&gh) && !red.contains(&pw),
        "{red}"
    );
    assert!(red.contains("[REDACTED:aws_access_key_id]"), "{red}");
    assert!(red.contains("[REDACTED:github_token]"), "{red}");
    assert!(
        red.contains("password=[REDACTED:password_assignment]"),
        "{red}"
    );
    // No secret: borrowed and byte-identical.
    let benign =
        "I need to reset my password; password=${DB_PASSWORD}; api_key = os.environ[\"K\"]";
    assert!(matches!(t().redact(benign), Cow::Borrowed(_)));
    assert_clean(&t(), benign);
}

#[test]
fn url_credentials_redact_only_the_password() {
    let pw = noise(18, 3);
    let text = format!("DATABASE_URL=postgres://app:{pw}@db.internal:5432/prod");
    assert_eq!(
        t().redact(&text),
        "DATABASE_URL=postgres://app:[REDACTED:url_credentials]@db.internal:5432/prod"
    );
    assert_clean(&t(), "postgres://user:password@localhost:5432/dev");
}

#[test]
fn pem_header_cut_inside_a_character_does_not_panic() {
    // Fuzz finding: the header window was cut at byte 120, inside a two-byte 'é'.
    let text = format!("-----BEGIN {}", "é".repeat(55));
    let _ = t().scan(&text);
    let _ = t().redact(&text);
}

#[test]
fn prefixed_tokens_without_digits_are_still_tokens() {
    // A random body of letters only (about one GitLab token in thirty).
    let letters: String = noise(80, 11)
        .chars()
        .filter(char::is_ascii_alphabetic)
        .take(20)
        .collect();
    for text in [
        format!("GITLAB_TOKEN: glpat-{letters}"),
        format!("export CI_JOB_TOKEN=glcbt-{letters}"),
    ] {
        assert_eq!(t().scan(&text).verdict, Verdict::Secret, "{text}");
    }
    // Placeholders and words after the prefix are not.
    for body in [
        "your_token_goes_here",
        "xxxxxxxxxxxxxxxxxxxx",
        "ThisIsNotARealTokenAtAll",
        "abcdefghijklmnopqrstu",
    ] {
        assert_ne!(
            t().scan(&format!("GITLAB_TOKEN: glpat-{body}")).verdict,
            Verdict::Secret,
            "{body}"
        );
    }
}

/// The redaction of `text` with the learned stage off.
fn redacted(text: &str) -> String {
    t().redact(text).into_owned()
}

#[test]
fn provider_prefixed_keys_are_keys_whatever_their_entropy() {
    // Tidy bodies a user pasted as keys: one repeated letter, the alphabet in order,
    // lower case and digits only.
    for text in [
        format!("OPENAI_API_KEY=sk-proj-{}", "A".repeat(44)),
        format!("my key is sk-{}", "a".repeat(48)),
        format!("sk-svcacct-{}", "abcdefghijklmnopqrstuvwxyz0123456789"),
        format!("ANTHROPIC_API_KEY=sk-ant-{}", "A".repeat(48)),
        format!("token ghp_{}", "abcdefghijklmnopqrstuvwxyz0123456789"),
        format!("token ghs_{}", "A".repeat(36)),
        format!("GITLAB_TOKEN=glpat-{}", "a".repeat(20)),
        format!("SLACK_BOT_TOKEN=xoxb-{}", "a".repeat(30)),
        format!("STRIPE_KEY=sk_live_{}", "a".repeat(24)),
        format!("AIza{}", "A".repeat(35)),
        format!("whsec_{}", "a".repeat(32)),
    ] {
        let r = t().scan(&text);
        assert_eq!(r.verdict, Verdict::Secret, "{text}: {:?}", r.findings);
        assert!(!redacted(&text).contains("AAAAAAAA"), "{text}");
        assert!(!redacted(&text).contains("aaaaaaaa"), "{text}");
    }
    // What stands for a key is not one: short stubs, masks, placeholders, words.
    for text in [
        "export OPENAI_API_KEY=sk-...".to_string(),
        "sk-xxxx".to_string(),
        "OPENAI_API_KEY=sk-<your-key>".to_string(),
        "GITHUB_TOKEN=ghp_XXXX".to_string(),
        format!("GITHUB_TOKEN=ghp_{}", "x".repeat(36)),
        format!("OPENAI_API_KEY=sk-{}", "x".repeat(48)),
        format!("AWS_ACCESS_KEY_ID=AKIA{}", "X".repeat(16)),
        format!("aws_access_key_id = AKIA{}", "IOSFODNN7EXAMPLE"),
        format!("STRIPE_KEY=sk_live_{}", "*".repeat(24)),
        format!(
            "OPENAI_API_KEY=sk-proj-{}",
            "your-openai-project-api-key-goes-here"
        ),
        format!("pip install sk-{}", "learn-extensions-for-classification"),
        format!(
            "The sk-{} is fine",
            "my-super-long-kebab-case-project-identifier-name"
        ),
        format!("GITHUB_TOKEN=ghp_{}", "ThisIsNotARealTokenItIsForTheDocs"),
    ] {
        let r = t().scan(&text);
        assert_ne!(r.verdict, Verdict::Secret, "{text}: {:?}", r.findings);
    }
}

#[test]
fn tokens_labelled_as_samples_are_documentation_but_test_mode_keys_are_secrets() {
    let stripe_test = format!("sk_test_{}", noise(24, 21));
    let gh = format!("ghp_{}", noise(36, 22));
    let openai = format!("sk-proj-{}", noise(48, 23));
    let aws = format!("AKIA{}", noise(16, 24).to_ascii_uppercase());
    // Labelled, just before the token, as an example.
    for text in [
        format!("Example key: {stripe_test}"),
        format!("The docs use the sample token `{gh}` throughout."),
        format!("For example {openai} would be rejected by the proxy."),
        format!("a dummy AWS access key id: {aws}"),
    ] {
        let r = t().scan(&text);
        assert_ne!(r.verdict, Verdict::Secret, "{text}: {:?}", r.findings);
    }
    // Declared a sample in an aside on its line: "test value", "not a real token".
    for text in [
        format!("Sample key for the tutorial (test value, never use in production): {openai}"),
        format!("Sandbox request (sk_test_ keys here are test values): curl -u {stripe_test}:"),
        format!("For testing, use {gh} (not a real token)."),
    ] {
        let r = t().scan(&text);
        assert_ne!(r.verdict, Verdict::Secret, "{text}: {:?}", r.findings);
    }
    // Stripe test-mode keys authenticate against a real account: "test" is no label,
    // and a label that does not reach the token is none either.
    for text in [
        stripe_test.clone(),
        format!("test key {stripe_test}"),
        format!("Stripe test key: {stripe_test}"),
        format!("For example, my key is {openai}"),
        format!("This example is real: {gh}"),
        format!("example\nGITHUB_TOKEN={gh}"),
        format!("My test key for the staging run: {stripe_test}"),
        format!("test values\nOPENAI_API_KEY={openai}"),
    ] {
        let r = t().scan(&text);
        assert_eq!(r.verdict, Verdict::Secret, "{text}: {:?}", r.findings);
    }
}

#[test]
fn cloud_connection_strings_redact_their_keys() {
    let b64 = |n: usize, seed: u64| {
        let mut s = noise(n - 2, seed);
        s.insert(7, '+');
        s.insert(19, '/');
        s
    };
    let account_key = format!("{}==", b64(86, 31));
    let shared_key = format!("{}=", b64(43, 32));
    let sig = format!("{}%2F{}%3D", noise(20, 33), noise(21, 34));
    let pw = format!("{}/{}", noise(9, 35), noise(6, 36));
    let aws_secret = noise(40, 37);
    let key_id: String = noise(80, 38)
        .bytes()
        .map(|b| format!("{:x}", b % 16))
        .take(40)
        .collect();
    let cases: Vec<(String, String)> = vec![
        (
            format!(
                "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={account_key};EndpointSuffix=core.windows.net"
            ),
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[REDACTED:azure_account_key];EndpointSuffix=core.windows.net".to_string(),
        ),
        (
            format!("AccountEndpoint=https://acme.documents.azure.com:443/;AccountKey={account_key};"),
            "AccountEndpoint=https://acme.documents.azure.com:443/;AccountKey=[REDACTED:azure_account_key];".to_string(),
        ),
        (
            format!(
                "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={shared_key};EntityPath=events"
            ),
            "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=[REDACTED:azure_shared_access_key];EntityPath=events".to_string(),
        ),
        (
            format!(
                "BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&srt=sco&sp=rl&se=2025-01-01T00:00:00Z&spr=https&sig={sig}"
            ),
            "BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&srt=sco&sp=rl&se=2025-01-01T00:00:00Z&spr=https&sig=[REDACTED:azure_sas_signature]".to_string(),
        ),
        (
            format!("https://acme.blob.core.windows.net/b/db.bak?sig={sig}&sv=2022-11-02&sp=r"),
            "https://acme.blob.core.windows.net/b/db.bak?sig=[REDACTED:azure_sas_signature]&sv=2022-11-02&sp=r".to_string(),
        ),
        (
            format!("aws_secret_access_key = {aws_secret}"),
            "aws_secret_access_key = [REDACTED:aws_secret_access_key]".to_string(),
        ),
        (
            format!("\"private_key_id\": \"{key_id}\","),
            "\"private_key_id\": \"[REDACTED:gcp_private_key_id]\",".to_string(),
        ),
        (
            format!("mongodb+srv://admin:{pw}@cluster0.ab1cd.mongodb.net/prod"),
            "mongodb+srv://admin:[REDACTED:url_credentials]@cluster0.ab1cd.mongodb.net/prod".to_string(),
        ),
        (
            format!("postgresql://app:{pw}@db.acme.io:5432/app"),
            "postgresql://app:[REDACTED:url_credentials]@db.acme.io:5432/app".to_string(),
        ),
        (
            format!("mysql://root:{pw}@10.0.0.5:3306/shop"),
            "mysql://root:[REDACTED:url_credentials]@10.0.0.5:3306/shop".to_string(),
        ),
        (
            format!("REDIS_URL=redis://:{pw}@cache.acme.io:6379/0"),
            "REDIS_URL=redis://:[REDACTED:url_credentials]@cache.acme.io:6379/0".to_string(),
        ),
        (
            format!("amqp://guest:{pw}@rabbit.acme.io:5672/vhost"),
            "amqp://guest:[REDACTED:url_credentials]@rabbit.acme.io:5672/vhost".to_string(),
        ),
    ];
    for (text, expected) in &cases {
        let r = t().scan(text);
        assert_eq!(r.verdict, Verdict::Secret, "{text}: {:?}", r.findings);
        assert_eq!(&redacted(text), expected);
    }
    // A service-account file pasted as text: its newlines JSON escapes (once or
    // twice), the key's span ends at its footer.
    let begin = format!("-----BEGIN {}-----", "PRIVATE KEY");
    let end = format!("-----END {}-----", "PRIVATE KEY");
    let body: Vec<String> = (0..6).map(|i| noise(64, 40 + i)).collect();
    let pem = format!("{begin}\n{}\n{end}\n", body.join("\n"));
    let file = serde_json::json!({
        "type": "service_account",
        "private_key_id": key_id,
        "private_key": pem,
        "client_email": "svc@acme-prod.iam.gserviceaccount.com",
    });
    let once = file.to_string();
    let twice = serde_json::Value::String(once.clone()).to_string();
    for text in [&once, &twice] {
        let red = redacted(text);
        assert!(red.contains("[REDACTED:pem_private_key]"), "{red}");
        assert!(red.contains("[REDACTED:gcp_private_key_id]"), "{red}");
        assert!(!red.contains(&body[3]) && !red.contains(&key_id), "{red}");
        assert!(
            red.contains("svc@acme-prod.iam.gserviceaccount.com"),
            "{red}"
        );
    }
    // Look-alikes: placeholders, the emulator, documentation, ports.
    for text in [
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=<your-key>;EndpointSuffix=core.windows.net",
        "AZURE_STORAGE_CONNECTION_STRING=UseDevelopmentStorage=true",
        "The connection string needs an AccountKey; copy it from the portal's Access keys blade.",
        "AccountKey=${AZURE_STORAGE_KEY}",
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=<key>",
        "https://acme.blob.core.windows.net/b/db.bak?sv=2022-11-02&sig=<signature>",
        "postgres://localhost:5432/db_admin@corp is the old DSN format",
        "\"private_key_id\": \"<your key id>\",",
    ] {
        assert_clean(&t(), text);
    }
}

#[test]
fn password_reset_links_are_not_passwords() {
    for text in [
        "Click here to reset your password: https://accounts.acme-mail.com/reset?token=abc123",
        "Hi Sam, we received a request to reset your password: https://app.shopify.com/auth/reset?t=8f2a",
        "Password: https://login.acme.io/reset",
        "Your password is https://vault.acme.io/share/abc123, open it once.",
    ] {
        assert_clean(&t(), text);
    }
    assert_finds(
        &t(),
        &format!("password: hunter{}", "2xyz"),
        Category::Secret,
        Verdict::Secret,
    );
    // A random one-time token in the link is a credential of its own: redacted as a
    // token, the link stays readable.
    let token = noise(32, 50);
    let text = format!("Reset your password here: https://acme.io/reset?token={token}");
    assert_eq!(
        redacted(&text),
        "Reset your password here: https://acme.io/reset?token=[REDACTED:secret_assignment]"
    );
}

#[test]
fn a_sample_key_declared_on_the_next_line_is_documentation() {
    let key = format!("sk_test_{}", "4eC39HqLyjWDarjtT1zdp7dc");
    let s = t();
    let docs = format!(
        "Set your key before the first call:\n\n  export PAYMENTS_KEY={key}\n\nThis is a sample test-mode key from our documentation; replace it with your own."
    );
    assert!(s.scan(&docs).verdict < Verdict::Secret, "{docs}");
    // The same key handed over, or beside an unrelated line, is a secret.
    for pasted in [
        format!("here is our staging key:\n{key}\nplease keep it safe"),
        format!("Sample output below.\n{key}\nThat was the config."),
    ] {
        assert_finds(&s, &pasted, Category::Secret, Verdict::Secret);
    }
}
