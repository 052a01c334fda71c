//! Credential families recognised by value alone (issue 36).
//!
//! For each family, samples are generated at run time from the provider's documented
//! token format (prefix, length, alphabet; checksums where documented), so this file
//! holds no secret-shaped literal. Each sample is placed in ordinary sentences with no
//! assignment cue ("the deploy uses X at the moment, rotate it later", X alone on a
//! line, inside a code block). A placement is caught when the scanner's secret
//! findings (`Scanner::scan_secrets`, what `dream scan --secrets-only` reports) cover
//! the whole sample. Families with no distinctive prefix carry their provider's name
//! in the sentence (their documented keyword), still with no assignment cue.
//!
//! A look-alike set (UUIDs, ULIDs, commit hashes, build ids, versions, package names,
//! base64 images, placeholders) in the same sentences must give no secret finding.
//!
//! `cargo nextest run -p dream-scan --test credentials --no-capture` prints the
//! per-family table (EVALUATION.md, "Credential families").
//!
//! With `DREAM_SCAN_TEXTS=DIR`, each test also writes every text it scans to
//! `DIR/<test>.jsonl` (`{"id", "text"}` rows), for `examples/dump_reports`: a change
//! meant to keep behaviour is checked by comparing the reports before and after.

use std::io::Write;
use std::ops::Range;

use dream_scan::{Category, Mode, Scanner};
use sha2::{Digest, Sha256};

/// `(family, template, provider word or "")`. A template is literal text with
/// `{c<n>}` runs of `n` random characters of class `c` (see [`class`]) and named
/// generators: `{uuid}`, `{age}`, `{bip12}`, `{bip24}`, `{basic}`, `{discord_bot}`.
const FAMILIES: &[(&str, &str, &str)] = &[
    // Package registries, source hosting, CI.
    ("npm", "npm_{a36}", ""),
    ("pypi", "pypi-AgEIcHlwaS5vcmc{u70}", ""),
    ("rubygems", "rubygems_{x48}", ""),
    ("nuget", "oy2{l43}", ""),
    ("crates_io", "cio{a32}", ""),
    ("clojars", "CLOJARS_{l60}", ""),
    ("docker_hub", "dckr_pat_{u27}", ""),
    ("jfrog_api_key", "AKCp{a69}", ""),
    ("jfrog_identity", "{a64}", "jfrog"),
    ("artifactory_reference", "cmVmdGtuOjAxOj{a50}", ""),
    ("buildkite", "bkua_{x40}", ""),
    ("circleci_pat", "CCIPAT_{a22}_{x40}", ""),
    ("circleci_legacy", "{x40}", "circleci"),
    ("travis_ci", "{u22}", "travis"),
    ("drone_ci", "{a32}", "drone"),
    ("github_pat", "ghp_{a36}", ""),
    ("github_fine_grained", "github_pat_{a22}_{a59}", ""),
    ("github_oauth", "gho_{a36}", ""),
    ("github_app", "ghs_{a36}", ""),
    ("github_refresh", "ghr_{a36}", ""),
    ("gitlab_pat", "glpat-{u20}", ""),
    ("gitlab_ptt", "glptt-{x40}", ""),
    ("gitlab_deploy", "gldt-{u20}", ""),
    ("gitlab_runner", "glrt-{u20}", ""),
    ("gitlab_rrt", "GR1348941{u20}", ""),
    ("gitlab_cicd_job", "glcbt-{u20}", ""),
    ("gitlab_feed", "glft-{u20}", ""),
    ("gitlab_incoming_mail", "glimt-{u25}", ""),
    ("gitlab_feature_flag", "glffct-{u20}", ""),
    ("gitlab_oauth_secret", "gloas-{x64}", ""),
    ("gitlab_scim", "glsoat-{u20}", ""),
    ("gitlab_k8s_agent", "glagent-{u50}", ""),
    ("gitlab_session", "_gitlab_session={x32}", ""),
    ("bitbucket_app_password", "ATBB{a32}", ""),
    ("bitbucket_client_id", "{a32}", "bitbucket"),
    ("bitbucket_client_secret", "{u64}", "bitbucket"),
    ("atlassian_api_token", "ATATT3xFfGF0{t180}", ""),
    ("atlassian_legacy", "{a24}", "jira"),
    ("sourcegraph", "sgp_{x16}_{x40}", ""),
    ("octopus_deploy", "API-{A26}", ""),
    ("prefect", "pnu_{a36}", ""),
    ("readme", "rdme_{l70}", ""),
    ("sonarqube", "squ_{x40}", ""),
    ("snyk", "{uuid}", "snyk"),
    ("codecov", "{uuid}", "codecov"),
    ("harness", "pat.{u22}.{x24}.{a20}", ""),
    ("typeform", "tfp_{u59}", ""),
    // AI providers.
    ("openai", "sk-{a48}", ""),
    ("openai_project", "sk-proj-{u120}", ""),
    ("anthropic", "sk-ant-api03-{u93}AA", ""),
    ("anthropic_admin", "sk-ant-admin01-{u93}AA", ""),
    ("huggingface", "hf_{L34}", ""),
    ("huggingface_org", "api_org_{L34}", ""),
    ("groq", "gsk_{a52}", ""),
    ("xai", "xai-{a80}", ""),
    ("replicate", "r8_{a37}", ""),
    ("perplexity", "pplx-{a48}", ""),
    ("langsmith", "lsv2_pt_{x32}_{x10}", ""),
    ("fireworks", "fw_{a24}", ""),
    ("pinecone", "pcsk_{a6}_{u70}", ""),
    ("pinecone_legacy", "{uuid}", "pinecone"),
    ("cohere", "{a40}", "cohere"),
    ("mistral", "{a32}", "mistral"),
    ("deepseek", "sk-{x32}", ""),
    ("together", "{x64}", "together.ai"),
    ("wandb", "{x40}", "wandb"),
    // Cloud and hosting.
    ("aws_access_key_id", "AKIA{A16}", ""),
    ("aws_secret_bare", "{b40}", "aws"),
    ("aws_bedrock", "ABSK{b120}", ""),
    ("gcp_api_key", "AIza{u35}", ""),
    ("gcp_oauth_secret", "GOCSPX-{u28}", ""),
    ("azure_ad_client_secret", "{a3}8Q~{a34}", ""),
    ("digitalocean_pat", "dop_v1_{x64}", ""),
    ("digitalocean_oauth", "doo_v1_{x64}", ""),
    ("digitalocean_refresh", "dor_v1_{x64}", ""),
    ("alibaba_key_id", "LTAI{a20}", ""),
    ("alibaba_secret", "{a30}", "alibaba"),
    ("tencent_secret_id", "AKID{a32}", ""),
    ("tencent_secret_key", "{a32}", "tencent"),
    ("yandex_api_key", "AQVN{u35}", ""),
    ("yandex_oauth", "y0_{u60}", ""),
    ("yandex_aws_key", "YC{u38}", "yandex"),
    ("fly_io", "fo1_{u43}", ""),
    ("fly_io_macaroon", "fm2_{t120}", ""),
    ("heroku_v2", "HRKU-{u60}", ""),
    ("heroku", "{uuid}", "heroku"),
    ("netlify", "nfp_{a36}", ""),
    ("netlify_legacy", "{u43}", "netlify"),
    ("vercel", "{a24}", "vercel"),
    ("render", "rnd_{a32}", ""),
    ("railway", "{uuid}", "railway"),
    ("supabase", "sbp_{x40}", ""),
    ("supabase_secret", "sb_secret_{u31}", ""),
    ("planetscale", "pscale_tkn_{u43}", ""),
    ("planetscale_password", "pscale_pw_{u43}", ""),
    ("planetscale_oauth", "pscale_oauth_{u43}", ""),
    ("neon", "napi_{l64}", ""),
    ("doppler", "dp.pt.{a43}", ""),
    ("pulumi", "pul-{x40}", ""),
    ("infracost", "ico-{a32}", ""),
    ("databricks", "dapi{x32}", ""),
    ("terraform_cloud", "{a14}.atlasv1.{u67}", ""),
    ("cloudflare_api_token", "{u40}", "cloudflare"),
    ("cloudflare_global_key", "{x37}", "cloudflare"),
    ("cloudflare_origin_ca", "v1.0-{x24}-{x146}", ""),
    ("vault_service", "hvs.{u90}", ""),
    ("vault_batch", "hvb.{u138}", ""),
    ("vault_legacy", "s.{a24}", "vault"),
    ("openshift", "sha256~{u43}", ""),
    ("scalingo", "tk-us-{u48}", ""),
    ("clickhouse", "4b1d{a38}", ""),
    ("defined_networking", "dnkey-{A26}-{A52}", ""),
    ("onepassword_service", "ops_eyJ{t250}", ""),
    (
        "onepassword_secret_key",
        "A3-{A6}-{A6}-{A5}-{A5}-{A5}-{A5}",
        "",
    ),
    ("age", "{age}", ""),
    // Observability, SaaS, productivity.
    ("grafana_cloud", "glc_{t60}", ""),
    ("grafana_service_account", "glsa_{a32}_{x8}", ""),
    ("grafana_api_key", "eyJrIjoi{t70}", ""),
    ("new_relic_user", "NRAK-{A27}", ""),
    ("new_relic_insert", "NRII-{u32}", ""),
    ("new_relic_browser", "NRJS-{x19}", ""),
    ("new_relic_license", "{x36}NRAL", ""),
    ("sentry_org", "sntrys_eyJ{t100}", ""),
    ("sentry_user", "sntryu_{x64}", ""),
    ("datadog", "{x32}", "datadog"),
    ("datadog_app", "{x40}", "datadog"),
    ("dynatrace", "dt0c01.{A24}.{A64}", ""),
    ("sumologic_id", "su{a12}", "sumo logic"),
    ("sumologic_key", "{a64}", "sumo logic"),
    ("pagerduty", "{u20}", "pagerduty"),
    ("postman", "PMAK-{x24}-{x34}", ""),
    ("linear", "lin_api_{a40}", ""),
    ("figma", "figd_{u40}", ""),
    ("notion", "ntn_{a46}", ""),
    ("notion_legacy", "secret_{a43}", ""),
    ("airtable_pat", "pat{a14}.{x64}", ""),
    ("airtable_legacy", "key{a14}", "airtable"),
    ("asana_pat", "2/{d16}/{d16}:{x32}", ""),
    ("asana_legacy", "1/{d16}:{x32}", "asana"),
    ("contentful_pat", "CFPAT-{u43}", ""),
    ("contentful_delivery", "{u43}", "contentful"),
    ("hubspot_private_app", "pat-na1-{uuid}", ""),
    ("hubspot_legacy", "{uuid}", "hubspot"),
    ("intercom", "dG9rOj{b56}", ""),
    ("zendesk", "{a40}", "zendesk"),
    ("frameio", "fio-u-{u64}", ""),
    ("sendgrid", "SG.{u22}.{u43}", ""),
    ("sendinblue", "xkeysib-{x64}-{a16}", ""),
    ("mailgun", "key-{x32}", ""),
    ("mailgun_signing", "{x32}-{x8}-{x8}", "mailgun"),
    ("mailchimp", "{x32}-us12", ""),
    ("launchdarkly", "api-{uuid}", ""),
    ("settlemint", "sm_pat_{a16}", ""),
    ("adafruit", "aio_{a28}", ""),
    ("adobe_client_secret", "p8e-{a32}", ""),
    ("adobe_client_id", "{x32}", "adobe"),
    ("algolia", "{x32}", "algolia"),
    ("confluent", "{t64}", "confluent"),
    ("easypost", "EZAK{a54}", ""),
    ("duffel", "duffel_live_{u43}", ""),
    ("shippo", "shippo_live_{x40}", ""),
    ("lob", "live_pub_{x31}", ""),
    ("intra42", "s-s4t2ud-{x64}", ""),
    ("maxmind", "{a6}_{a29}_mmk", ""),
    ("messagebird", "{a25}", "messagebird"),
    ("gitter", "{x40}", "gitter"),
    ("looker", "{a24}", "looker"),
    ("mattermost", "{l26}", "mattermost"),
    ("cisco_meraki", "{x40}", "meraki"),
    ("rapidapi", "{u50}", "rapidapi"),
    ("fastly", "{u32}", "fastly"),
    ("finnhub", "{l20}", "finnhub"),
    ("flickr", "{a32}", "flickr"),
    ("freshbooks", "{a64}", "freshbooks"),
    ("etsy", "{l24}", "etsy"),
    ("nytimes", "{u32}", "nytimes"),
    ("sendbird", "{x40}", "sendbird"),
    ("squarespace", "{uuid}", "squarespace"),
    ("okta", "00{u40}", "okta"),
    ("sidekiq", "{x8}:{x8}", "contribsys"),
    ("salesforce", "00D{a15}!{t96}", "salesforce"),
    // Payments, finance, commerce.
    ("stripe_secret", "sk_live_{a99}", ""),
    ("stripe_restricted", "rk_live_{a99}", ""),
    ("stripe_webhook", "whsec_{a32}", ""),
    ("shopify_access", "shpat_{x32}", ""),
    ("shopify_custom", "shpca_{x32}", ""),
    ("shopify_private", "shppa_{x32}", ""),
    ("shopify_shared_secret", "shpss_{x32}", ""),
    ("square_access", "sq0atp-{u22}", ""),
    ("square_secret", "sq0csp-{u43}", ""),
    ("square_oauth", "EAAA{u60}", ""),
    ("razorpay", "rzp_live_{a14}", ""),
    ("flutterwave_secret", "FLWSECK_TEST-{x32}-X", ""),
    ("flutterwave_public", "FLWPUBK-{x32}-X", ""),
    ("flutterwave_encryption", "FLWSECK_TEST{x12}", ""),
    ("plaid_access", "access-production-{uuid}", ""),
    ("plaid_secret", "{x30}", "plaid"),
    ("braintree", "access_token$production${a16}${x32}", ""),
    ("adyen", "AQE{t120}", ""),
    ("coinbase", "{u64}", "coinbase"),
    ("kraken", "{b86}==", "kraken"),
    ("kucoin", "{x24}", "kucoin"),
    ("bittrex", "{a32}", "bittrex"),
    ("gocardless", "live_{u40}", "gocardless"),
    ("finicity", "{x32}", "finicity"),
    // Messaging, social, webhooks.
    ("slack_bot", "xoxb-{d12}-{d13}-{a24}", ""),
    ("slack_user", "xoxp-{d12}-{d12}-{d13}-{x32}", ""),
    ("slack_app", "xapp-1-A{A10}-{d13}-{x64}", ""),
    ("slack_config", "xoxe.xoxp-1-{a160}", ""),
    (
        "slack_webhook",
        "https://hooks.slack.com/services/T{A10}/B{A10}/{a24}",
        "",
    ),
    (
        "discord_webhook",
        "https://discord.com/api/webhooks/{d19}/{u68}",
        "",
    ),
    ("discord_bot", "{discord_bot}", ""),
    ("discord_client_secret", "{u32}", "discord"),
    (
        "teams_webhook",
        "https://acme.webhook.office.com/webhookb2/{uuid}@{uuid}/IncomingWebhook/{x32}/{uuid}",
        "",
    ),
    (
        "azure_logic_app",
        "https://prod-12.westus.logic.azure.com:443/workflows/{x32}/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={u43}",
        "",
    ),
    (
        "google_chat_webhook",
        "https://chat.googleapis.com/v1/spaces/AAAA{u7}/messages?key=AIza{u35}&token={u43}",
        "",
    ),
    (
        "zapier_webhook",
        "https://hooks.zapier.com/hooks/catch/{d7}/{l6}",
        "",
    ),
    ("telegram_bot", "{d10}:AA{u33}", ""),
    ("twilio_api_key", "SK{x32}", ""),
    ("twilio_account_sid", "AC{x32}", ""),
    ("facebook_access", "EAAG{a160}", ""),
    ("facebook_secret", "{x32}", "facebook"),
    ("twitter_bearer", "AAAAAAAAAAAAAAAAAAAAA{a12}%2F{a60}", ""),
    ("twitter_access", "{d19}-{a30}", "twitter"),
    ("twitter_api_secret", "{a50}", "twitter"),
    ("linkedin_secret", "{a16}", "linkedin"),
    ("twitch", "{l30}", "twitch"),
    ("mapbox", "sk.eyJ{u60}.{u22}", ""),
    ("dropbox_short_lived", "sl.{u138}", ""),
    ("dropbox_long_lived", "{a11}AAAAAAAAAA{u43}", "dropbox"),
    ("firebase_fcm", "AAAA{a7}:APA91b{u134}", ""),
    ("gcp_oauth_token", "ya29.{u120}", ""),
    // Generic shapes: headers, connection strings, keys, seeds.
    ("http_basic_auth", "Authorization: Basic [[{basic}]]", ""),
    ("bearer_header", "Authorization: Bearer [[{a40}]]", ""),
    ("jwt", "{jwt}", ""),
    (
        "postgres_url",
        "postgres://app:[[{a16}]]@db.internal:5432/main",
        "",
    ),
    ("mysql_url", "mysql://root:[[{a16}]]@10.0.0.5/shop", ""),
    (
        "mongodb_srv",
        "mongodb+srv://svc:[[{a16}]]@cluster0.ab1cd.mongodb.net/app",
        "",
    ),
    (
        "redis_url",
        "redis://default:[[{a16}]]@cache.internal:6379/0",
        "",
    ),
    ("amqp_url", "amqp://worker:[[{a16}]]@mq.internal:5672/", ""),
    (
        "azure_storage",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[[{b86}==]];EndpointSuffix=core.windows.net",
        "",
    ),
    (
        "gcp_service_account",
        "\"private_key_id\": \"[[{x40}]]\"",
        "",
    ),
    ("rsa_private_key", "{pem:RSA PRIVATE KEY}", ""),
    ("openssh_private_key", "{pem:OPENSSH PRIVATE KEY}", ""),
    ("ec_private_key", "{pem:EC PRIVATE KEY}", ""),
    ("dsa_private_key", "{pem:DSA PRIVATE KEY}", ""),
    ("pgp_private_key", "{pem:PGP PRIVATE KEY BLOCK}", ""),
    ("bip39_12_words", "{bip12}", ""),
    ("bip39_24_words", "{bip24}", ""),
];

/// Sentences with no assignment cue; `{P}` is the provider word (or nothing).
const SENTENCES: &[&str] = &[
    "the {P}deploy uses {X} at the moment, rotate it later",
    "here's what {P}I got back: {X}",
    "ok so {P}\n{X}\nthanks",
    "```\n{P}\n{X}\n```",
    "can you check whether the {P}one, {X}, still works?",
];

/// Look-alikes: none of these is a credential.
fn look_alikes(rng: &mut Rng) -> Vec<(&'static str, String)> {
    let mut v: Vec<(&'static str, String)> = Vec::new();
    for _ in 0..3 {
        v.push(("uuid", sample("{uuid}", rng)));
        v.push(("uuid_upper", sample("{uuid}", rng).to_ascii_uppercase()));
        v.push(("ulid", sample("01J{C23}", rng)));
        v.push(("git_sha", sample("{x40}", rng)));
        v.push(("git_short_sha", sample("{x7}", rng)));
        v.push(("sha256_digest", sample("sha256:{x64}", rng)));
        v.push(("md5", sample("{x32}", rng)));
        v.push(("build_id", sample("build-{d8}.{d3}", rng)));
        v.push(("ci_run_id", sample("{d10}", rng)));
        v.push(("base64_image", sample("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42m{b80}AAAAASUVORK5CYII=", rng)));
    }
    for s in [
        "1.2.3",
        "v2.10.0-rc.1+build.5678",
        "0.21.0-beta.3",
        "npm_config_cache",
        "npm_package_version",
        "hf_transfer",
        "hf_hub_download",
        "sk-learn",
        "scikit-learn",
        "gsk_utils",
        "api_org_settings",
        "dop_v1_migration",
        "key-value",
        "pat-na1-docs",
        "pat.json",
        "SG.config.ts",
        "glpat-xxxxxxxxxxxxxxxxxxxx",
        "npm_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "AKIAIOSFODNN7EXAMPLE",
        "sk-proj-your-key-here",
        "hf_YOUR_TOKEN_HERE_PLEASE_REPLACE_ME_NOW",
        "gsk_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "lin_api_your-key-here",
        "your-key-here",
        "EXAMPLE",
        "https://discord.com/api/webhooks/123/your-webhook-token",
        "https://hooks.slack.com/services/XXX/YYY/ZZZ",
        "postgres://user:password@localhost:5432/db",
        "redis://localhost:6379/0",
        "Authorization: Basic <base64 of user:pass>",
        "the basic idea works",
        "AC/DC played at 20:00",
        "call 1234567890 at 10:30",
        "12:34:56",
        "SKU-12345",
        "the Q~ operator",
        "-----BEGIN PUBLIC KEY-----",
        "abandon the plan and start over",
        "release notes for 2026-12-06",
        "my-team/my-project",
        "crate dream-scan 0.1.0",
        "the api-docs page",
        "ticket JIRA-1234",
        "image sha256~ tag",
    ] {
        v.push(("fixed", s.to_string()));
    }
    // Dream's own ids, and a git log line.
    v.push((
        "git_log",
        sample(
            "commit {x40}\nAuthor: A Developer\n\n    fix the build",
            rng,
        ),
    ));
    v.push(("ulid_path", sample("memories/01J{C23}.md", rng)));
    // Prose of BIP-39 words that is no valid mnemonic is checked in the unit tests.
    v
}

// ---------------------------------------------------------------- generation

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn class(c: char) -> &'static [u8] {
    match c {
        'x' => b"0123456789abcdef",
        'X' => b"0123456789ABCDEF",
        'a' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        'A' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        'l' => b"abcdefghijklmnopqrstuvwxyz0123456789",
        'L' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        'u' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
        'b' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        't' => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
        'd' => b"0123456789",
        'C' => b"0123456789ABCDEFGHJKMNPQRSTVWXYZ",
        _ => panic!("class {c}"),
    }
}

fn run(c: char, n: usize, rng: &mut Rng) -> String {
    let a = class(c);
    (0..n).map(|_| a[rng.below(a.len())] as char).collect()
}

fn b64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.len();
        let v = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= n {
                out.push(A[((v >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn bip39_words() -> Vec<String> {
    let mut words = Vec::new();
    for line in include_str!("../src/families/bip39_english.txt").lines() {
        let mut w = String::new();
        for c in line.chars() {
            if c.is_ascii_uppercase() && !w.is_empty() {
                words.push(std::mem::take(&mut w));
            }
            w.push(c.to_ascii_lowercase());
        }
        words.push(w);
    }
    assert_eq!(words.len(), 2048);
    words
}

/// A valid BIP-39 mnemonic of `n` words: entropy, then its SHA-256 bits.
fn mnemonic(n: usize, rng: &mut Rng) -> String {
    let words = bip39_words();
    let ent_bits = n * 11 * 32 / 33;
    let entropy: Vec<u8> = (0..ent_bits / 8).map(|_| rng.next() as u8).collect();
    let hash = Sha256::digest(&entropy);
    let mut bits: Vec<u8> = Vec::new();
    for b in entropy.iter().chain(hash.iter()) {
        for j in (0..8).rev() {
            bits.push((b >> j) & 1);
        }
    }
    (0..n)
        .map(|w| {
            let idx = (0..11).fold(0usize, |a, k| (a << 1) | bits[w * 11 + k] as usize);
            words[idx].clone()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// An age secret key: bech32 (BIP-173) of 32 random bytes under `age-secret-key-`.
fn age_key(rng: &mut Rng) -> String {
    const CHARSET: &[u8] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
    let bytes: Vec<u8> = (0..32).map(|_| rng.next() as u8).collect();
    let mut data: Vec<u8> = Vec::new();
    let (mut acc, mut nbits) = (0u32, 0);
    for b in bytes {
        acc = (acc << 8) | u32::from(b);
        nbits += 8;
        while nbits >= 5 {
            nbits -= 5;
            data.push(((acc >> nbits) & 31) as u8);
        }
    }
    if nbits > 0 {
        data.push(((acc << (5 - nbits)) & 31) as u8);
    }
    let hrp = "age-secret-key-";
    let mut values: Vec<u8> = hrp.bytes().map(|c| c >> 5).collect();
    values.push(0);
    values.extend(hrp.bytes().map(|c| c & 31));
    values.extend(&data);
    values.extend([0; 6]);
    let pm = polymod(&values) ^ 1;
    data.extend((0..6).map(|i| ((pm >> (5 * (5 - i))) & 31) as u8));
    let body: String = data.iter().map(|&d| CHARSET[d as usize] as char).collect();
    format!("{hrp}1{body}").to_ascii_uppercase()
}

fn polymod(values: &[u8]) -> u32 {
    const GEN: [u32; 5] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
    let mut chk: u32 = 1;
    for &v in values {
        let top = chk >> 25;
        chk = ((chk & 0x1ff_ffff) << 5) ^ u32::from(v);
        for (i, g) in GEN.iter().enumerate() {
            if (top >> i) & 1 == 1 {
                chk ^= g;
            }
        }
    }
    chk
}

fn sample(template: &str, rng: &mut Rng) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find('}').expect("closed");
        let name = &rest[open + 1..close];
        rest = &rest[close + 1..];
        let piece = match name {
            "uuid" => format!(
                "{}-{}-4{}-a{}-{}",
                run('x', 8, rng),
                run('x', 4, rng),
                run('x', 3, rng),
                run('x', 3, rng),
                run('x', 12, rng)
            ),
            "age" => age_key(rng),
            "bip12" => mnemonic(12, rng),
            "bip24" => mnemonic(24, rng),
            "basic" => b64(format!("deploy:{}", run('a', 14, rng)).as_bytes()),
            "discord_bot" => {
                let id = format!("1{}", run('d', 18, rng));
                let id = b64(id.as_bytes()).trim_end_matches('=').to_string();
                format!("{id}.{}.{}", run('u', 6, rng), run('u', 38, rng))
            }
            "jwt" => {
                let h = b64(br#"{"alg":"HS256","typ":"JWT"}"#);
                let p = b64(format!(r#"{{"sub":"{}"}}"#, run('d', 9, rng)).as_bytes());
                let strip = |s: String| s.trim_end_matches('=').replace('+', "-").replace('/', "_");
                format!("{}.{}.{}", strip(h), strip(p), run('u', 43, rng))
            }
            pem if pem.starts_with("pem:") => {
                let label = &pem[4..];
                let body: Vec<String> = (0..4).map(|_| run('b', 64, rng)).collect();
                format!(
                    "-----BEGIN {label}-----\n{}\n-----END {label}-----",
                    body.join("\n")
                )
            }
            spec => {
                let c = spec.chars().next().expect("class");
                let n: usize = spec[1..].parse().expect("count");
                run(c, n, rng)
            }
        };
        out.push_str(&piece);
    }
    out.push_str(rest);
    out
}

fn place(sentence: &str, provider: &str, sample: &str) -> (String, Range<usize>) {
    let p = if provider.is_empty() {
        String::new()
    } else {
        format!("{provider} ")
    };
    let s = sentence.replace("{P}", &p);
    let at = s.find("{X}").expect("placeholder");
    // `[[…]]` marks the secret part of a sample (a connection string's password).
    let (core, bare) = match (sample.find("[["), sample.find("]]")) {
        (Some(o), Some(c)) => (o..c - 2, sample.replace("[[", "").replace("]]", "")),
        _ => (0..sample.len(), sample.to_string()),
    };
    let text = s.replace("{X}", &bare);
    (text, at + core.start..at + core.end)
}

/// Where a test writes the texts it scans (see the module docs); nowhere unless
/// `DREAM_SCAN_TEXTS` is set.
struct Texts(Option<std::io::BufWriter<std::fs::File>>);

impl Texts {
    fn new(test: &str) -> Texts {
        Texts(std::env::var_os("DREAM_SCAN_TEXTS").map(|dir| {
            let path = std::path::Path::new(&dir).join(format!("{test}.jsonl"));
            std::io::BufWriter::new(std::fs::File::create(path).expect("texts file"))
        }))
    }

    fn write(&mut self, id: &str, text: &str) {
        if let Some(w) = &mut self.0 {
            let row = serde_json::json!({ "id": id, "text": text });
            writeln!(w, "{row}").expect("texts written");
        }
    }
}

/// The secret findings' spans cover `want`.
fn covered(scanner: &Scanner, text: &str, want: &Range<usize>) -> bool {
    covering(scanner, text, want).is_some()
}

/// The rules whose findings cover `want`, if they do.
fn covering(scanner: &Scanner, text: &str, want: &Range<usize>) -> Option<Vec<&'static str>> {
    let r = scanner.scan_secrets(text);
    let rules: Vec<&'static str> = r
        .findings
        .iter()
        .filter(|f| f.category == Category::Secret)
        .filter(|f| {
            f.span
                .as_ref()
                .is_some_and(|s| s.start < want.end && want.start < s.end)
        })
        .map(|f| f.rule)
        .collect();
    let mut spans: Vec<Range<usize>> = r
        .findings
        .iter()
        .filter(|f| f.category == Category::Secret)
        .filter_map(|f| f.span.clone())
        .collect();
    spans.sort_by_key(|s| s.start);
    let mut at = want.start;
    for s in spans {
        if s.start <= at && s.end > at {
            at = s.end;
        }
    }
    (at >= want.end).then_some(rules)
}

#[test]
fn credential_families_are_recognised_by_value_alone() {
    let scanner = Scanner::new(Mode::Transcript);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut texts = Texts::new("families");
    let mut recognised = 0;
    let mut table = Vec::new();
    for (family, template, provider) in FAMILIES {
        let mut caught = 0;
        let mut total = 0;
        let mut missed = Vec::new();
        let mut rules: Vec<&'static str> = Vec::new();
        for n in 0..3 {
            let sample = sample(template, &mut rng);
            for (i, sentence) in SENTENCES.iter().enumerate() {
                let (text, span) = place(sentence, provider, &sample);
                texts.write(&format!("{family}/{n}/{i}"), &text);
                total += 1;
                match covering(&scanner, &text, &span) {
                    Some(r) => {
                        caught += 1;
                        rules.extend(r);
                    }
                    None => missed.push(text),
                }
            }
        }
        if caught == total {
            recognised += 1;
        }
        rules.sort_unstable();
        rules.dedup();
        table.push((family, caught, total, missed, rules, !provider.is_empty()));
    }
    println!("| family | caught / placements | by rule |");
    println!("|---|---|---|");
    for (family, caught, total, missed, rules, near) in &table {
        let how = if *near { " (provider word)" } else { "" };
        println!(
            "| {family}{how} | {caught} / {total} | {} |",
            rules.join(", ")
        );
        if let Some(m) = missed.first() {
            eprintln!("MISSED {family}: {m:?}");
        }
    }
    let placements: usize = table.iter().map(|t| t.2).sum();
    let caught: usize = table.iter().map(|t| t.1).sum();
    println!(
        "families recognised in every placement: {recognised} / {} ({:.1} %); placements caught {caught} / {placements} ({:.1} %)",
        FAMILIES.len(),
        100.0 * recognised as f64 / FAMILIES.len() as f64,
        100.0 * caught as f64 / placements as f64
    );
    assert!(
        recognised * 100 >= FAMILIES.len() * 95,
        "{recognised} of {} families recognised",
        FAMILIES.len()
    );
}

#[test]
fn look_alikes_are_not_credentials() {
    let scanner = Scanner::new(Mode::Transcript);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut texts = Texts::new("look_alikes");
    let mut false_positives = Vec::new();
    let mut total = 0;
    for (n, (kind, sample)) in look_alikes(&mut rng).into_iter().enumerate() {
        for (i, sentence) in SENTENCES.iter().enumerate() {
            let (text, _) = place(sentence, "", &sample);
            texts.write(&format!("{kind}/{n}/{i}"), &text);
            total += 1;
            let r = scanner.scan_secrets(&text);
            if r.findings.iter().any(|f| f.category == Category::Secret) {
                false_positives.push((kind, text, r.findings));
            }
        }
    }
    println!(
        "look-alikes: {total} placements, {} false positives",
        false_positives.len()
    );
    assert!(false_positives.is_empty(), "{false_positives:#?}");
}

/// A private-key header alone on its line is a key cut off (issue 36); the header
/// inside a sentence, or with the footer on the next line (an empty key in the
/// docs), is not.
#[test]
fn private_key_headers_on_their_own_line() {
    let scanner = Scanner::new(Mode::Transcript);
    for label in [
        "OPENSSH PRIVATE KEY",
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "DSA PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
        "ENCRYPTED PRIVATE KEY",
        "PRIVATE KEY",
    ] {
        let header = format!("-----BEGIN {label}-----");
        for text in [
            header.clone(),
            format!("here it is:\n{header}\n"),
            format!("here it is:\n  {header}\nb3BlbnNzaC1r\n"),
        ] {
            let at = text.find("-----BEGIN").unwrap();
            assert!(
                covered(&scanner, &text, &(at..at + header.len())),
                "{text:?}"
            );
        }
        for text in [
            format!("the file starts with {header} and ends with a footer"),
            format!("{header}\n-----END {label}-----"),
        ] {
            let r = scanner.scan_secrets(&text);
            assert!(
                r.findings.iter().all(|f| f.category != Category::Secret),
                "{text:?}: {:?}",
                r.findings
            );
        }
    }
}
