//! Credential families recognised by their provider's documented token format, with
//! no assignment cue around them (`the deploy uses npm_… at the moment`).
//!
//! Each family is a row of [`table`]: how it is triggered and the shape of its token,
//! written from the provider's documentation (prefix, length, alphabet; checksums where
//! the format documents one: age's bech32, BIP-39's SHA-256 bits). A trigger is one or
//! more literals of the scanner's single Aho-Corasick pass:
//!
//! - [`Trigger::Prefix`]: the token starts with the literal (case as written), e.g.
//!   `npm_`, `dop_v1_`, `hvs.`;
//! - [`Trigger::Infix`]: the literal sits inside the token after a fixed lead
//!   (Mailchimp's `…-us12`, Terraform Cloud's `….atlasv1.…`, Azure AD's `…Q~…`);
//! - [`Trigger::Url`]: a webhook URL, the literal its host and path (the span reaches
//!   back to the scheme);
//! - [`Trigger::Near`]: the provider has no distinctive prefix, so its name must occur
//!   within [`NEAR`] bytes of a token of the documented shape (a Datadog key is 32
//!   hex digits, which alone is any hash).
//!
//! Shapes without any literal (Twilio's `SK`/`AC` + 32 hex, Telegram bot tokens,
//! Discord bot tokens, BIP-39 seed phrases) are found by [`sweep`], one bounded pass
//! over the text's long tokens and runs of lower-case words.
//!
//! A token that stands for a key (`npm_xxxx…`, `…EXAMPLE`, `your-key-here`) is not a
//! finding (`secrets::stands_for_a_key`), nor is one labelled as a sample on its
//! line (`secrets::labelled_sample`).

use std::ops::Range;
use std::sync::LazyLock;

use sha2::{Digest, Sha256};

use crate::secrets::{masked_or_placeholder, reads_as_words};

/// Bytes on each side of a provider word searched for a [`Trigger::Near`] token.
pub(crate) const NEAR: usize = 160;

/// How a family's token is found.
pub(crate) enum Trigger {
    /// The token starts with one of these literals (case-sensitive).
    Prefix(&'static [&'static str]),
    /// The literal is inside the token, after `lead` (a one-run spec such as `x{32}`).
    Infix(&'static [&'static str], &'static str),
    /// A URL: the literal is matched case-insensitively and the span reaches back over
    /// the host and scheme before it.
    Url(&'static [&'static str]),
    /// The provider's name (any case) within [`NEAR`] bytes of the token.
    Near(&'static [&'static str]),
}

/// One credential family.
pub(crate) struct Family {
    /// Rule id, as reported and in `[REDACTED:<id>]`.
    pub id: &'static str,
    pub trigger: Trigger,
    /// The token after its prefix (for `Near`, the whole token): runs `c{n}`,
    /// `c{n,m}`, `c{n,}` of a character class `c` (see [`in_class`]) and literals,
    /// separated by spaces.
    pub spec: &'static str,
    /// A further check of the whole token (checksum, decoding).
    pub check: Option<fn(&str) -> bool>,
}

const fn prefix(id: &'static str, lits: &'static [&'static str], spec: &'static str) -> Family {
    Family {
        id,
        trigger: Trigger::Prefix(lits),
        spec,
        check: None,
    }
}

const fn near(id: &'static str, words: &'static [&'static str], spec: &'static str) -> Family {
    Family {
        id,
        trigger: Trigger::Near(words),
        spec,
        check: None,
    }
}

const fn with(mut f: Family, check: fn(&str) -> bool) -> Family {
    f.check = Some(check);
    f
}

const UUID: &str = "h{8} - h{4} - h{4} - h{4} - h{12}";

/// Every family, most specific first. Formats are the providers' documented ones.
pub(crate) fn table() -> Vec<Family> {
    vec![
        // ------------------------------------------------ package registries, CI
        prefix("npm_token", &["npm_"], "a{36}"),
        prefix(
            "pypi_token",
            &["pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBp"],
            "u{50,}",
        ),
        prefix("rubygems_api_key", &["rubygems_"], "x{48}"),
        prefix("nuget_api_key", &["oy2"], "l{43}"),
        prefix("crates_io_token", &["cio"], "a{32}"),
        prefix("clojars_token", &["CLOJARS_"], "l{60}"),
        prefix("docker_hub_token", &["dckr_pat_", "dckr_oat_"], "u{27,}"),
        prefix("jfrog_api_key", &["AKCp"], "a{69}"),
        prefix("jfrog_reference_token", &["cmVmdGtuOjAxOj"], "a{50,}"),
        prefix("buildkite_token", &["bkua_"], "x{40}"),
        prefix("circleci_token", &["CCIPAT_", "CCIPRJ_"], "a{22} _ x{40}"),
        prefix("gitlab_token", &["glffct-", "gloas-", "glsoat-"], "u{20,}"),
        prefix("gitlab_runner_registration", &["GR1348941"], "u{20,}"),
        prefix("gitlab_session", &["_gitlab_session="], "x{32}"),
        prefix("bitbucket_token", &["ATBB", "ATCTT"], "a{28,}"),
        prefix("atlassian_api_token", &["ATATT"], "t{100,}"),
        prefix("sourcegraph_token", &["sgp_", "sgph_"], "h{16,} _ x{40}"),
        prefix("sourcegraph_token", &["sgp_"], "x{40}"),
        prefix("octopus_deploy_key", &["API-"], "A{26,32}"),
        prefix("prefect_token", &["pnu_"], "a{36}"),
        prefix("readme_api_key", &["rdme_"], "l{70}"),
        prefix("sonar_token", &["squ_", "sqp_", "sqa_"], "x{40}"),
        prefix("typeform_token", &["tfp_"], "t{40,}"),
        prefix("harness_token", &["pat.", "sat."], "u{22} . h{24} . a{20}"),
        // ------------------------------------------------ AI providers
        prefix("huggingface_token", &["hf_", "api_org_"], "L{34}"),
        prefix("groq_api_key", &["gsk_"], "a{52}"),
        prefix("xai_api_key", &["xai-"], "a{80}"),
        prefix("replicate_token", &["r8_"], "a{37}"),
        prefix("perplexity_api_key", &["pplx-"], "a{48}"),
        prefix(
            "langsmith_api_key",
            &["lsv2_pt_", "lsv2_sk_"],
            "x{32} _ x{10}",
        ),
        prefix("fireworks_api_key", &["fw_"], "a{24}"),
        prefix("pinecone_api_key", &["pcsk_"], "a{5,8} _ u{60,}"),
        prefix(
            "anthropic_api_key",
            &["sk-ant-admin01-", "sk-ant-api03-"],
            "u{80,}",
        ),
        prefix(
            "openai_api_key",
            &["sk-proj-", "sk-svcacct-", "sk-admin-"],
            "u{40,}",
        ),
        near("cohere_api_key", &["cohere", "co_api_key"], "a{40}"),
        near("mistral_api_key", &["mistral"], "a{32}"),
        near("deepseek_api_key", &["deepseek"], "sk- x{32}"),
        near(
            "together_api_key",
            &["together.ai", "togetherai", "together_api"],
            "x{64}",
        ),
        near(
            "wandb_api_key",
            &["wandb", "weights & biases", "weights and biases"],
            "x{40}",
        ),
        // ------------------------------------------------ cloud and hosting
        prefix(
            "digitalocean_token",
            &["dop_v1_", "doo_v1_", "dor_v1_"],
            "x{64}",
        ),
        prefix("alibaba_access_key_id", &["LTAI"], "a{12,20}"),
        prefix("tencent_secret_id", &["AKID"], "a{32,36}"),
        prefix("yandex_api_key", &["AQVN"], "u{35,38}"),
        prefix(
            "yandex_oauth_token",
            &["y0_", "y1_", "y2_", "y3_"],
            "u{55,}",
        ),
        prefix("yandex_iam_token", &["t1."], "u{50,} . u{40,}"),
        prefix("aws_bedrock_api_key", &["ABSK"], "b{100,} e{0,2}"),
        prefix(
            "aws_bedrock_api_key",
            &["bedrock-api-key-"],
            "b{100,} e{0,2}",
        ),
        prefix("fly_io_token", &["fo1_"], "u{43}"),
        prefix(
            "fly_io_token",
            &["FlyV1 fm1r_", "FlyV1 fm2_", "fm1r_", "fm2_"],
            "t{60,} e{0,2}",
        ),
        prefix("heroku_api_key", &["HRKU-"], "u{60}"),
        prefix("netlify_token", &["nfp_"], "a{36}"),
        prefix("render_api_key", &["rnd_"], "a{32}"),
        prefix("supabase_token", &["sbp_"], "x{40}"),
        prefix("supabase_secret_key", &["sb_secret_"], "u{31,}"),
        prefix(
            "planetscale_token",
            &["pscale_tkn_", "pscale_oauth_", "pscale_pw_"],
            "u{32,64}",
        ),
        prefix("neon_api_key", &["napi_"], "l{64}"),
        prefix(
            "doppler_token",
            &[
                "dp.pt.",
                "dp.st.",
                "dp.sa.",
                "dp.ct.",
                "dp.scim.",
                "dp.audit.",
            ],
            "a{40,44}",
        ),
        prefix("pulumi_token", &["pul-"], "x{40}"),
        prefix("infracost_api_key", &["ico-"], "a{32}"),
        prefix("databricks_token", &["dapi"], "x{32}"),
        prefix("cloudflare_origin_ca_key", &["v1.0-"], "x{24} - x{146}"),
        prefix("scalingo_token", &["tk-us-"], "u{48}"),
        prefix("clickhouse_cloud_key", &["4b1d"], "a{38}"),
        prefix("defined_networking_token", &["dnkey-"], "A{26} - A{52}"),
        prefix("hashicorp_vault_token", &["hvs.", "hvb.", "hvr."], "u{24,}"),
        prefix("openshift_token", &["sha256~"], "u{43}"),
        Family {
            id: "terraform_cloud_token",
            trigger: Trigger::Infix(&[".atlasv1."], "a{14}"),
            spec: "u{60,70}",
            check: None,
        },
        Family {
            id: "azure_ad_client_secret",
            trigger: Trigger::Infix(&["Q~"], "m{4}"),
            spec: "m{31,34}",
            check: Some(azure_ad_secret),
        },
        near(
            "hashicorp_vault_token",
            &["vault", "vault_token"],
            "s. a{24}",
        ),
        near(
            "hashicorp_vault_token",
            &["vault", "vault_token"],
            "b. t{60,}",
        ),
        with(
            near("aws_secret_access_key", &["aws", "amazon", "akia"], "b{40}"),
            aws_secret,
        ),
        near("alibaba_secret", &["alibaba", "aliyun"], "a{30}"),
        near("tencent_secret_key", &["tencent"], "a{32}"),
        near("yandex_access_key", &["yandex"], "YC u{38}"),
        near("heroku_api_key", &["heroku"], UUID),
        near("railway_token", &["railway"], UUID),
        near("vercel_token", &["vercel"], "a{24}"),
        near("netlify_token", &["netlify"], "u{40,46}"),
        near("cloudflare_api_token", &["cloudflare", "cf_api"], "u{40}"),
        near("cloudflare_global_key", &["cloudflare", "cf_api"], "x{37}"),
        near(
            "terraform_cloud_token",
            &["terraform", "tfe_token", "atlas_token"],
            "a{14} .atlasv1. u{60,70}",
        ),
        near("codecov_token", &["codecov"], UUID),
        near("codecov_token", &["codecov"], "x{32}"),
        near("circleci_token", &["circleci", "circle_token"], "x{40}"),
        near("travis_ci_token", &["travis"], "u{22}"),
        near("drone_ci_token", &["drone"], "a{32}"),
        near("jfrog_identity_token", &["jfrog", "artifactory"], "a{64}"),
        near("sumologic_access_id", &["sumo"], "su a{12}"),
        near("sumologic_access_key", &["sumo"], "a{64}"),
        near("bitbucket_client_secret", &["bitbucket"], "u{64}"),
        near("bitbucket_client_id", &["bitbucket"], "a{32}"),
        near(
            "atlassian_api_token",
            &["atlassian", "jira", "confluence"],
            "a{24}",
        ),
        near("okta_api_token", &["okta", "ssws"], "00 u{40}"),
        near("sentry_token", &["sentry"], "x{64}"),
        near("datadog_api_key", &["datadog", "dd_api", "dd_app"], "x{40}"),
        near("datadog_api_key", &["datadog", "dd_api", "dd_app"], "x{32}"),
        near(
            "new_relic_key",
            &["new relic", "newrelic", "new_relic"],
            "x{64}",
        ),
        near("pagerduty_token", &["pagerduty"], "u{20}"),
        near("confluent_key", &["confluent"], "A{16}"),
        near("confluent_secret", &["confluent"], "t{64}"),
        near("launchdarkly_token", &["launchdarkly"], "u{40}"),
        near("grafana_token", &["grafana"], "u{40,}"),
        near("fastly_api_token", &["fastly"], "u{32}"),
        near("gitter_token", &["gitter"], "x{40}"),
        near("looker_client_secret", &["looker"], "a{24}"),
        near("looker_client_id", &["looker"], "a{20}"),
        near("mattermost_token", &["mattermost"], "l{26}"),
        near("cisco_meraki_api_key", &["meraki"], "x{40}"),
        near("rapidapi_key", &["rapidapi"], "u{50}"),
        near(
            "privateai_key",
            &["private-ai", "privateai", "private_ai"],
            "a{32}",
        ),
        near("beamer_token", &["beamer"], "b_ u{44}"),
        // ------------------------------------------------ observability, SaaS
        prefix("grafana_cloud_token", &["glc_"], "t{32,400} e{0,2}"),
        prefix("grafana_service_account_token", &["glsa_"], "a{32} _ x{8}"),
        prefix("grafana_api_key", &["eyJrIjoi"], "t{50,} e{0,2}"),
        prefix("new_relic_user_key", &["NRAK-"], "A{27}"),
        prefix("new_relic_insert_key", &["NRII-"], "u{32}"),
        prefix("new_relic_browser_key", &["NRJS-"], "x{19}"),
        Family {
            id: "new_relic_license_key",
            trigger: Trigger::Infix(&["NRAL"], "x{36}"),
            spec: "",
            check: None,
        },
        prefix("sentry_token", &["sntrys_eyJ"], "t{50,} e{0,2}"),
        prefix("sentry_token", &["sntryu_"], "x{64}"),
        prefix(
            "dynatrace_token",
            &["dt0c01.", "dt0s01.", "dt0s02.", "dt0s08.", "dt0s16."],
            "A{24} . A{64}",
        ),
        prefix("postman_api_key", &["PMAK-"], "x{24} - x{34}"),
        prefix("linear_api_key", &["lin_api_"], "a{40}"),
        prefix("linear_oauth_token", &["lin_oauth_"], "x{64}"),
        prefix("figma_token", &["figd_"], "u{40,}"),
        prefix("notion_token", &["ntn_"], "a{40,50}"),
        prefix("notion_token", &["secret_"], "a{43}"),
        prefix("airtable_token", &["pat"], "a{14} . x{64}"),
        prefix("asana_token", &["2/"], "d{10,20} / d{10,20} : x{32}"),
        prefix("contentful_token", &["CFPAT-"], "u{43}"),
        prefix("hubspot_token", &["pat-na1-", "pat-eu1-"], UUID),
        prefix("intercom_token", &["dG9rOj"], "b{40,80} e{0,2}"),
        prefix("typeform_token", &["tfp_"], "u{59}"),
        prefix("frameio_token", &["fio-u-"], "u{64}"),
        prefix(
            "sendinblue_api_key",
            &["xkeysib-", "xsmtpsib-"],
            "x{64} - a{16}",
        ),
        prefix("sendgrid_api_key", &["SG."], "u{22} . u{43}"),
        prefix("mailgun_api_key", &["key-", "pubkey-"], "x{32}"),
        prefix("launchdarkly_token", &["api-", "sdk-", "mob-"], UUID),
        prefix(
            "settlemint_token",
            &["sm_aat_", "sm_pat_", "sm_sat_"],
            "a{16}",
        ),
        prefix("adafruit_io_key", &["aio_"], "a{28}"),
        prefix("adobe_client_secret", &["p8e-"], "a{32}"),
        prefix("easypost_api_key", &["EZAK", "EZTK"], "a{54}"),
        prefix("duffel_token", &["duffel_test_", "duffel_live_"], "u{43}"),
        prefix("shippo_token", &["shippo_live_", "shippo_test_"], "x{40}"),
        prefix("lob_api_key", &["live_pub_", "test_pub_"], "x{31}"),
        prefix("onepassword_service_account", &["ops_eyJ"], "t{50,} e{0,2}"),
        prefix(
            "onepassword_secret_key",
            &["A3-"],
            "A{6} - A{6} - A{5} - A{5} - A{5} - A{5}",
        ),
        prefix(
            "authress_key",
            &["authress_", "sc_", "ext_", "scauth_"],
            "l{5,30} . l{4,6} . acc_ u{10,32} . t{30,120} e{0,2}",
        ),
        prefix("intra42_secret", &["s-s4t2ud-", "s-s4t2af-"], "x{64}"),
        Family {
            id: "maxmind_license_key",
            trigger: Trigger::Infix(&["_mmk"], "w{36}"),
            spec: "",
            check: None,
        },
        near("algolia_api_key", &["algolia"], "x{32}"),
        near("adobe_client_id", &["adobe"], "x{32}"),
        near("asana_token", &["asana"], "1/ d{10,20} : x{32}"),
        near("asana_client_secret", &["asana"], "a{32}"),
        near("airtable_api_key", &["airtable"], "key a{14}"),
        near("contentful_token", &["contentful"], "u{43}"),
        near("dropbox_token", &["dropbox"], "a{11} AAAAAAAAAA u{43}"),
        near("intercom_token", &["intercom"], "u{60}"),
        near("zendesk_token", &["zendesk"], "a{40}"),
        near("hubspot_api_key", &["hubspot"], UUID),
        near("mailgun_signing_key", &["mailgun"], "x{32} - x{8} - x{8}"),
        near("messagebird_key", &["messagebird"], "a{25}"),
        near("lob_api_key", &["lob"], "live_ x{35}"),
        near("lob_api_key", &["lob"], "test_ x{35}"),
        near("gocardless_token", &["gocardless"], "live_ u{40}"),
        near("finicity_token", &["finicity"], "x{32}"),
        near("finnhub_token", &["finnhub"], "l{20}"),
        near("flickr_token", &["flickr"], "a{32}"),
        near("freshbooks_token", &["freshbooks"], "a{64}"),
        near("nytimes_token", &["nytimes", "new york times"], "u{32}"),
        near("etsy_token", &["etsy"], "l{24}"),
        near("sendbird_token", &["sendbird"], "x{40}"),
        near("squarespace_token", &["squarespace"], UUID),
        near("snyk_token", &["snyk"], UUID),
        near("pinecone_api_key", &["pinecone"], UUID),
        near("kucoin_secret", &["kucoin"], UUID),
        near("kucoin_key", &["kucoin"], "x{24}"),
        near("kraken_secret", &["kraken"], "t{80,90} e{0,2}"),
        near("bittrex_key", &["bittrex"], "a{32}"),
        near("coinbase_token", &["coinbase"], "u{64}"),
        near("plaid_secret", &["plaid"], "x{30}"),
        near("plaid_client_id", &["plaid"], "x{24}"),
        near("linkedin_client_secret", &["linkedin"], "a{16}"),
        near("twitch_token", &["twitch"], "l{30}"),
        near("twitter_api_secret", &["twitter"], "a{50}"),
        near("twitter_api_key", &["twitter"], "a{25}"),
        near("twitter_access_token", &["twitter"], "d{15,25} - a{20,40}"),
        near("discord_client_secret", &["discord"], "u{32}"),
        near("facebook_app_secret", &["facebook", "fb_app"], "x{32}"),
        near(
            "salesforce_token",
            &["salesforce", "sfdc"],
            "00D a{12,15} ! t{80,} e{0,2}",
        ),
        near("sidekiq_secret", &["contribsys"], "x{8} : x{8}"),
        near("vault_unseal_key", &["unseal"], "b{44} e{0,2}"),
        // ------------------------------------------------ payments, commerce
        prefix(
            "shopify_token",
            &["shpat_", "shpca_", "shppa_", "shpss_"],
            "h{32}",
        ),
        prefix("square_token", &["sq0atp-"], "u{22}"),
        prefix("square_token", &["sq0csp-"], "u{43}"),
        prefix("square_token", &["EAAA"], "u{60}"),
        prefix("facebook_access_token", &["EAA"], "a{100,400}"),
        prefix("razorpay_key", &["rzp_live_", "rzp_test_"], "a{14}"),
        prefix(
            "flutterwave_key",
            &["FLWSECK_TEST-", "FLWSECK-", "FLWPUBK_TEST-", "FLWPUBK-"],
            "x{32} -X",
        ),
        prefix("flutterwave_key", &["FLWSECK_TEST", "FLWSECK"], "x{12}"),
        prefix(
            "plaid_access_token",
            &[
                "access-sandbox-",
                "access-development-",
                "access-production-",
            ],
            UUID,
        ),
        prefix(
            "braintree_token",
            &["access_token$production$", "access_token$sandbox$"],
            "a{16} $ x{32}",
        ),
        prefix("adyen_api_key", &["AQE"], "t{80,} e{0,2}"),
        prefix("stripe_secret_key", &["sk_live_", "rk_live_"], "a{24,}"),
        // ------------------------------------------------ messaging, webhooks
        prefix(
            "slack_token",
            &["xoxe.xoxp-", "xoxe.xoxb-", "xoxe-"],
            "u{40,}",
        ),
        prefix("mapbox_token", &["sk.eyJ", "tk.eyJ"], "u{50,} . u{20,}"),
        prefix("dropbox_token", &["sl.u.", "sl."], "u{130,}"),
        prefix("twitter_bearer_token", &["AAAAAAAAAAAAAAAAAAAAA"], "p{30,}"),
        with(
            prefix("http_basic_auth", &["Basic ", "basic "], "b{8,} e{0,2}"),
            basic_credentials,
        ),
        with(
            prefix("age_secret_key", &["AGE-SECRET-KEY-1"], "B{58}"),
            age_checksum,
        ),
        Family {
            id: "firebase_fcm_key",
            trigger: Trigger::Infix(&[":APA91b"], "u{11}"),
            spec: "u{134}",
            check: None,
        },
        Family {
            id: "mailchimp_api_key",
            trigger: Trigger::Infix(&["-us"], "x{32}"),
            spec: "d{1,2}",
            check: None,
        },
        Family {
            id: "discord_webhook",
            trigger: Trigger::Url(&["discord.com/api/webhooks/", "discordapp.com/api/webhooks/"]),
            spec: "d{17,20} / u{60,80}",
            check: None,
        },
        Family {
            id: "teams_webhook",
            trigger: Trigger::Url(&[
                "webhook.office.com/webhookb2/",
                "outlook.office.com/webhook/",
            ]),
            spec: "h{8} - h{4} - h{4} - h{4} - h{12} @ h{8} - h{4} - h{4} - h{4} - h{12} /IncomingWebhook/ h{32} / h{8} - h{4} - h{4} - h{4} - h{12}",
            check: None,
        },
        Family {
            id: "teams_webhook",
            trigger: Trigger::Url(&[
                "webhook.office.com/webhookb2/",
                "outlook.office.com/webhook/",
            ]),
            spec: "h{8} - h{4} - h{4} - h{4} - h{12} @ h{8} - h{4} - h{4} - h{4} - h{12} /IncomingWebhook/ h{32} / h{8} - h{4} - h{4} - h{4} - h{12} / t{20,}",
            check: None,
        },
        Family {
            id: "azure_logic_app_webhook",
            trigger: Trigger::Url(&["logic.azure.com"]),
            spec: "q{20,600} sig= u{40,50}",
            check: None,
        },
        Family {
            id: "zapier_webhook",
            trigger: Trigger::Url(&["hooks.zapier.com/hooks/catch/"]),
            spec: "d{5,12} / a{5,12}",
            check: None,
        },
        Family {
            id: "google_chat_webhook",
            trigger: Trigger::Url(&["chat.googleapis.com/v1/spaces/"]),
            spec: "q{10,200} key= u{30,60} q{0,10} token= t{30,80} e{0,2}",
            check: None,
        },
    ]
}

// ---------------------------------------------------------------- spec matching

/// Whether byte `b` is in class `c`.
pub(crate) fn in_class(c: u8, b: u8) -> bool {
    match c {
        b'x' => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        b'X' => b.is_ascii_digit() || (b'A'..=b'F').contains(&b),
        b'h' => b.is_ascii_hexdigit(),
        b'a' => b.is_ascii_alphanumeric(),
        b'A' => b.is_ascii_digit() || b.is_ascii_uppercase(),
        b'l' => b.is_ascii_digit() || b.is_ascii_lowercase(),
        b'L' => b.is_ascii_alphabetic(),
        b'u' => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
        b'b' => b.is_ascii_alphanumeric() || b == b'+' || b == b'/',
        b't' => b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'-'),
        b'd' => b.is_ascii_digit(),
        b'w' => b.is_ascii_alphanumeric() || b == b'_',
        b'B' => b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".contains(&b),
        b'e' => b == b'=',
        b'm' => b.is_ascii_alphanumeric() || matches!(b, b'_' | b'~' | b'.' | b'-'),
        b'p' => b.is_ascii_alphanumeric() || b == b'%',
        // A URL's path and query up to the next key (lazily bounded by its max).
        b'q' => b.is_ascii_alphanumeric() || b"/?&=%._-:".contains(&b),
        _ => false,
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Part {
    Lit(&'static str),
    Run(u8, usize, usize),
}

/// Parses a spec (see [`Family::spec`]); panics on a malformed one (a unit test parses
/// them all).
pub(crate) fn parse(spec: &'static str) -> Vec<Part> {
    spec.split(' ')
        .filter(|s| !s.is_empty())
        .map(|item| {
            let b = item.as_bytes();
            if b.len() >= 4 && b[1] == b'{' && item.ends_with('}') {
                let inner = &item[2..item.len() - 1];
                let (lo, hi) = match inner.split_once(',') {
                    Some((lo, "")) => (lo.parse().unwrap(), 4096),
                    Some((lo, hi)) => (lo.parse().unwrap(), hi.parse().unwrap()),
                    None => {
                        let n = inner.parse().unwrap();
                        (n, n)
                    }
                };
                Part::Run(b[0], lo, hi)
            } else {
                Part::Lit(item)
            }
        })
        .collect()
}

/// Matches `parts` at `at`; returns the end. Runs are greedy; a lazy run (class `q`)
/// stops at the first place where the rest matches.
pub(crate) fn match_parts(b: &[u8], at: usize, parts: &[Part]) -> Option<usize> {
    let mut i = at;
    for (k, p) in parts.iter().enumerate() {
        match *p {
            Part::Lit(l) => {
                if !b[i..].starts_with(l.as_bytes()) {
                    return None;
                }
                i += l.len();
            }
            Part::Run(b'q', lo, hi) => {
                let mut n = 0;
                loop {
                    if n >= lo
                        && let Some(end) = match_parts(b, i + n, &parts[k + 1..])
                    {
                        return Some(end);
                    }
                    if n >= hi || i + n >= b.len() || !in_class(b'q', b[i + n]) {
                        return None;
                    }
                    n += 1;
                }
            }
            Part::Run(c, lo, hi) => {
                let mut n = 0;
                while n < hi && i + n < b.len() && in_class(c, b[i + n]) {
                    n += 1;
                }
                if n < lo {
                    return None;
                }
                i += n;
            }
        }
    }
    Some(i)
}

/// The token goes on after `end`: its last part's class, a letter or a digit.
fn runs_on(b: &[u8], end: usize, parts: &[Part]) -> bool {
    let Some(&next) = b.get(end) else {
        return false;
    };
    if next.is_ascii_alphanumeric() {
        return true;
    }
    match parts.last() {
        Some(Part::Run(c, _, _)) => in_class(*c, next) && next != b'.',
        _ => false,
    }
}

/// Token characters (for the boundary before a token).
fn tok(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A compiled family.
pub(crate) struct Compiled {
    pub id: &'static str,
    pub kind: Kind,
    pub lits: Vec<&'static str>,
    pub lead: Vec<Part>,
    pub parts: Vec<Part>,
    pub check: Option<fn(&str) -> bool>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Prefix,
    Infix,
    Url,
    Near,
}

/// Every family, compiled once per process.
pub(crate) static FAMILIES: LazyLock<Vec<Compiled>> = LazyLock::new(|| {
    table()
        .into_iter()
        .map(|f| {
            let (kind, lits, lead) = match f.trigger {
                Trigger::Prefix(l) => (Kind::Prefix, l.to_vec(), Vec::new()),
                Trigger::Infix(l, lead) => (Kind::Infix, l.to_vec(), parse(lead)),
                Trigger::Url(l) => (Kind::Url, l.to_vec(), Vec::new()),
                Trigger::Near(l) => (Kind::Near, l.to_vec(), Vec::new()),
            };
            Compiled {
                id: f.id,
                kind,
                lits,
                lead,
                parts: parse(f.spec),
                check: f.check,
            }
        })
        .collect()
});

impl Compiled {
    /// The token whose literal was seen at `hit` (a byte range of the original text),
    /// for a `Prefix`, `Infix` or `Url` family.
    pub(crate) fn at(&self, text: &str, hit: Range<usize>) -> Option<Range<usize>> {
        let b = text.as_bytes();
        let lit = self.lits.iter().find(|l| {
            let l = l.as_bytes();
            b.len() >= hit.start + l.len()
                && match self.kind {
                    Kind::Url => b[hit.start..hit.start + l.len()].eq_ignore_ascii_case(l),
                    _ => &b[hit.start..hit.start + l.len()] == l,
                }
        })?;
        let body = hit.start + lit.len();
        let start = match self.kind {
            Kind::Infix => {
                let Some(&Part::Run(c, lo, hi)) = self.lead.first() else {
                    return None;
                };
                let mut s = hit.start;
                while s > 0 && hit.start - s < hi && in_class(c, b[s - 1]) {
                    s -= 1;
                }
                if hit.start - s < lo || (s > 0 && tok(b[s - 1])) {
                    return None;
                }
                s
            }
            Kind::Url => {
                // Back over the host (`ptb.`, a tenant) and the scheme.
                let mut s = hit.start;
                while s > 0 && (b[s - 1].is_ascii_alphanumeric() || matches!(b[s - 1], b'.' | b'-'))
                {
                    s -= 1;
                }
                for scheme in ["https://", "http://"] {
                    if s >= scheme.len()
                        && b[s - scheme.len()..s].eq_ignore_ascii_case(scheme.as_bytes())
                    {
                        s -= scheme.len();
                        break;
                    }
                }
                s
            }
            _ => {
                if hit.start > 0 && tok(b[hit.start - 1]) && !lit.starts_with(['_', '-', '.']) {
                    return None;
                }
                hit.start
            }
        };
        let end = match_parts(b, body, &self.parts)?;
        if runs_on(b, end, &self.parts) {
            return None;
        }
        let token = &text[start..end];
        let random = &text[body..end];
        if (!random.is_empty() && stands_for_a_key(random)) || self.check.is_some_and(|c| !c(token))
        {
            return None;
        }
        Some(start..end)
    }

    /// Tokens of this `Near` family's shape in `window` (a byte range of `text`).
    pub(crate) fn near(&self, text: &str, window: Range<usize>, out: &mut Vec<Range<usize>>) {
        let b = text.as_bytes();
        let sep = |c: u8| !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'/'));
        let mut i = window.start;
        while i < window.end {
            if i > 0 && !sep(b[i - 1]) {
                i += 1;
                continue;
            }
            if let Some(end) = match_parts(b, i, &self.parts)
                && end > i
                && !runs_on(b, end, &self.parts)
                && !(end < b.len() && matches!(b[end], b'-' | b'_' | b'/' | b'+'))
            {
                let token = &text[i..end];
                if looks_random(token)
                    && !stands_for_a_key(token)
                    && self.check.is_none_or(|c| c(token))
                {
                    out.push(i..end);
                }
                i = end;
                continue;
            }
            i += 1;
        }
    }
}

/// A token with no prefix to vouch for it must look random: letters with digits, or
/// letters of both cases (about one random 20-character body in thirty holds no
/// digit), and no run of one character.
fn looks_random(t: &str) -> bool {
    let (lower, upper, digit, _) = classes(t);
    ((digit && (lower || upper)) || (lower && upper && t.len() >= 12))
        && crate::secrets::entropy(t) >= 3.0
}

/// A bare AWS secret access key: base64 with both cases and a digit, not hex (a
/// commit hash near the word "aws" is no key).
fn aws_secret(t: &str) -> bool {
    let (lower, upper, digit, _) = classes(t);
    lower && upper && digit && crate::secrets::entropy(t) >= 4.0
}

// ---------------------------------------------------------------- checks

/// A body that stands for a key: a mask or placeholder, or words without a digit
/// (`your-project-key-goes-here`). Random bodies of twenty or more characters hold a
/// digit; short random runs of letters often pass for words (`Iuys`, `KYb`), and hex
/// letters are half vowels, so a body with a digit is read as words no more.
fn stands_for_a_key(body: &str) -> bool {
    masked_or_placeholder(body)
        || (!body.bytes().any(|c| c.is_ascii_digit()) && reads_as_words(body))
}

/// `Basic <base64>` decodes to `user:password` in printable ASCII.
fn basic_credentials(token: &str) -> bool {
    let b64 = token[6..].trim_start();
    match crate::encoded::decode_base64(b64.as_bytes()) {
        Some(bytes) => {
            let ok = bytes.iter().all(|c| (0x20..0x7f).contains(c));
            let colon = bytes.iter().position(|&c| c == b':');
            ok && colon.is_some_and(|p| p > 0 && p + 1 < bytes.len())
        }
        None => false,
    }
}

/// Azure AD client secrets: three characters, a digit, `Q~`, then 31–34.
fn azure_ad_secret(token: &str) -> bool {
    let b = token.as_bytes();
    b.len() >= 37 && b[3].is_ascii_digit() && &b[4..6] == b"Q~" && {
        let (_, _, digit, _) = classes(&token[6..]);
        digit
    }
}

fn classes(s: &str) -> (bool, bool, bool, bool) {
    (
        s.bytes().any(|c| c.is_ascii_lowercase()),
        s.bytes().any(|c| c.is_ascii_uppercase()),
        s.bytes().any(|c| c.is_ascii_digit()),
        s.bytes().any(|c| !c.is_ascii_alphanumeric()),
    )
}

const BECH32: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";

/// The bech32 checksum (BIP-173) of an age secret key (`AGE-SECRET-KEY-1…`).
fn age_checksum(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    let Some((hrp, data)) = lower.rsplit_once('1') else {
        return false;
    };
    let mut values: Vec<u8> = Vec::with_capacity(hrp.len() * 2 + 1 + data.len());
    values.extend(hrp.bytes().map(|c| c >> 5));
    values.push(0);
    values.extend(hrp.bytes().map(|c| c & 31));
    for c in data.bytes() {
        match BECH32.iter().position(|&x| x == c) {
            Some(v) => values.push(v as u8),
            None => return false,
        }
    }
    bech32_polymod(&values) == 1
}

pub(crate) fn bech32_polymod(values: &[u8]) -> u32 {
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

// ---------------------------------------------------------------- the sweep

/// The BIP-39 English wordlist (CamelCase, one line per initial: the file itself
/// holds no run of list words).
static BIP39: LazyLock<Vec<String>> = LazyLock::new(|| {
    let mut words = Vec::with_capacity(2048);
    for line in include_str!("families/bip39_english.txt").lines() {
        let mut word = String::new();
        for c in line.chars() {
            if c.is_ascii_uppercase() && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            word.push(c.to_ascii_lowercase());
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words
});

/// The BIP-39 English wordlist, in its order (an index is a word's 11 bits).
#[cfg(test)]
pub(crate) fn bip39_words() -> &'static [String] {
    &BIP39
}

fn bip39_index(word: &[u8]) -> Option<usize> {
    if !(3..=8).contains(&word.len()) {
        return None;
    }
    BIP39.binary_search_by(|w| w.as_bytes().cmp(word)).ok()
}

/// Whether the words (indices) are a BIP-39 mnemonic: 12–24 words, a multiple of
/// three, whose last bits are the first bits of the SHA-256 of the rest.
pub(crate) fn bip39_valid(idx: &[usize]) -> bool {
    let n = idx.len();
    if !(12..=24).contains(&n) || !n.is_multiple_of(3) {
        return false;
    }
    let bits = n * 11;
    let cs = bits / 33;
    let ent = bits - cs;
    let mut bytes = vec![0u8; ent / 8];
    let bit = |k: usize| (idx[k / 11] >> (10 - k % 11)) & 1;
    for (k, byte) in bytes.iter_mut().enumerate() {
        for j in 0..8 {
            *byte = (*byte << 1) | bit(k * 8 + j) as u8;
        }
    }
    let hash = Sha256::digest(&bytes);
    (0..cs).all(|j| ((hash[j / 8] >> (7 - j % 8)) & 1) as usize == bit(ent + j))
}

/// Shapes without a literal: Twilio keys, Telegram and Discord bot tokens (long
/// tokens), and BIP-39 seed phrases (runs of list words). `(rule, span)`.
pub(crate) fn sweep(text: &str, out: &mut Vec<(&'static str, Range<usize>)>) {
    // Shorter texts (most JSON keys and values) hold neither.
    if text.len() >= 34 {
        long_tokens(text, out);
    }
    if text.len() >= 12 * 4 - 1 {
        seed_phrases(text, out);
    }
}

fn long_tokens(text: &str, out: &mut Vec<(&'static str, Range<usize>)>) {
    const MIN: usize = 34;
    let b = text.as_bytes();
    let n = b.len();
    let is = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':');
    let mut i = 0;
    while i + MIN <= n {
        let probe = i + MIN - 1;
        if !is(b[probe]) {
            i = probe + 1;
            continue;
        }
        let mut end = probe + 1;
        while end < n && is(b[end]) {
            end += 1;
        }
        i = end + 1;
        // A run of MIN or more holds the byte MIN before its end: where that byte is
        // outside the run (as for every word of prose), it is shorter.
        if !is(b[end - MIN]) {
            continue;
        }
        // The run starts at or after the `i` this probe was taken for.
        let mut start = probe;
        while start > probe + 1 - MIN && is(b[start - 1]) {
            start -= 1;
        }
        if end - start < MIN {
            continue;
        }
        // A run that continues a longer token (`/`, `+`, `=`) is part of something else.
        if (start > 0 && matches!(b[start - 1], b'+' | b'=' | b'$'))
            || (end < n && matches!(b[end], b'+' | b'='))
        {
            continue;
        }
        let mut e = end;
        while e > start && matches!(b[e - 1], b'.' | b':' | b'-') {
            e -= 1;
        }
        let run = &text[start..e];
        if let Some(rule) = long_token_rule(run) {
            out.push((rule, start..e));
        } else if let Some(colon) = run.find(':') {
            // `… id:token` inside a longer run (`bot123:AA…` in a URL path).
            let digits = run[..colon]
                .bytes()
                .rev()
                .take_while(u8::is_ascii_digit)
                .count();
            let s = colon - digits;
            if s > 0 && telegram(&run[s..]) && !run.as_bytes()[s - 1].is_ascii_digit() {
                out.push(("telegram_bot_token", start + s..e));
            }
        }
    }
}

fn long_token_rule(run: &str) -> Option<&'static str> {
    let b = run.as_bytes();
    if b.len() == 34
        && (run.starts_with("SK") || run.starts_with("AC"))
        && b[2..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        && b[2..].iter().any(u8::is_ascii_digit)
        && b[2..].iter().any(u8::is_ascii_alphabetic)
    {
        return Some("twilio_key");
    }
    if telegram(run) {
        return Some("telegram_bot_token");
    }
    if discord_bot(run) {
        return Some("discord_bot_token");
    }
    None
}

/// Telegram bot token: the bot's numeric id, `:`, 35 characters of base64url.
fn telegram(run: &str) -> bool {
    let Some((id, secret)) = run.split_once(':') else {
        return false;
    };
    (8..=10).contains(&id.len())
        && id.bytes().all(|c| c.is_ascii_digit())
        && secret.len() == 35
        && secret.bytes().all(|c| in_class(b'u', c))
        && !stands_for_a_key(secret)
        && looks_random(secret)
}

/// Discord bot token: base64 of the bot's numeric id, `.`, a 6-character timestamp,
/// `.`, a 27–38 character HMAC.
fn discord_bot(run: &str) -> bool {
    let mut parts = run.split('.');
    let (Some(id), Some(ts), Some(mac), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    if !(23..=28).contains(&id.len()) || ts.len() != 6 || !(27..=38).contains(&mac.len()) {
        return false;
    }
    if ![id, ts, mac]
        .iter()
        .all(|p| p.bytes().all(|c| in_class(b'u', c)))
    {
        return false;
    }
    let padded = {
        let mut s = id.replace('-', "+").replace('_', "/");
        while s.len() % 4 != 0 {
            s.push('=');
        }
        s
    };
    crate::encoded::decode_base64(padded.as_bytes())
        .is_some_and(|d| d.len() >= 17 && d.iter().all(u8::is_ascii_digit))
        && !stands_for_a_key(mac)
}

/// Runs of BIP-39 words separated by single spaces (or one line break); each run of
/// 12 or more is searched for valid mnemonics, longest first. A cheap gate goes first:
/// only a stretch of twelve or more lower-case words of three to eight letters, one
/// separator apart, is looked up in the list (prose breaks such stretches with short
/// words, capitals and punctuation within a few words).
fn seed_phrases(text: &str, out: &mut Vec<(&'static str, Range<usize>)>) {
    let b = text.as_bytes();
    let n = b.len();
    let mut i = 0;
    let (mut start, mut end, mut words) = (0, 0, 0);
    while i < n {
        if !b[i].is_ascii_lowercase() {
            i += 1;
            continue;
        }
        let s = i;
        while i < n && b[i].is_ascii_lowercase() {
            i += 1;
        }
        let fits = (3..=8).contains(&(i - s))
            && (s == 0 || !b[s - 1].is_ascii_alphanumeric())
            && (i == n || !b[i].is_ascii_alphanumeric());
        let follows = words > 0 && s == end + 1 && matches!(b[end], b' ' | b'\n');
        if fits && follows {
            words += 1;
            end = i;
        } else {
            if words >= 12 {
                phrases_in(text, start..end, out);
            }
            (start, end, words) = if fits { (s, i, 1) } else { (0, 0, 0) };
        }
    }
    if words >= 12 {
        phrases_in(text, start..end, out);
    }
}

/// [`seed_phrases`] within a gated stretch.
fn phrases_in(text: &str, within: Range<usize>, out: &mut Vec<(&'static str, Range<usize>)>) {
    let base = within.start;
    let mut found = Vec::new();
    lookup_phrases(&text[within], &mut found);
    out.extend(
        found
            .into_iter()
            .map(|(r, s)| (r, s.start + base..s.end + base)),
    );
}

fn lookup_phrases(text: &str, out: &mut Vec<(&'static str, Range<usize>)>) {
    let b = text.as_bytes();
    let n = b.len();
    // (index, start, end) of each word of the current run.
    let mut run: Vec<(usize, usize, usize)> = Vec::new();
    let mut i = 0;
    let flush = |run: &mut Vec<(usize, usize, usize)>,
                 out: &mut Vec<(&'static str, Range<usize>)>| {
        if run.len() >= 12 {
            mnemonics(run, out);
        }
        run.clear();
    };
    while i < n {
        let c = b[i];
        if !c.is_ascii_lowercase() {
            if !(c == b' ' || c == b'\n') || run.is_empty() {
                flush(&mut run, out);
            }
            i += 1;
            continue;
        }
        let start = i;
        while i < n && b[i].is_ascii_lowercase() {
            i += 1;
        }
        let prev_ok = start == 0
            || matches!(
                b[start - 1],
                b' ' | b'\n' | b'"' | b'\'' | b'`' | b'(' | b':' | b'>'
            );
        match bip39_index(&b[start..i]).filter(|_| prev_ok) {
            Some(idx) => {
                // Words must follow each other with one separator.
                if let Some(&(_, _, e)) = run.last()
                    && start != e + 1
                {
                    flush(&mut run, out);
                }
                run.push((idx, start, i));
            }
            None => flush(&mut run, out),
        }
    }
    flush(&mut run, out);
}

fn mnemonics(run: &[(usize, usize, usize)], out: &mut Vec<(&'static str, Range<usize>)>) {
    // A phrase is pasted whole: it starts or ends within a few words of its run's
    // ends (list words around it: "abandon … zoo moment"). Only those windows are
    // checked, so a text of list words costs a bounded number of hashes per run.
    const SLACK: usize = 4;
    let idx: Vec<usize> = run.iter().map(|w| w.0).collect();
    let n = idx.len();
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for len in [24, 21, 18, 15, 12] {
        if len > n {
            continue;
        }
        for s in (0..=SLACK.min(n - len)).chain((n - len).saturating_sub(SLACK)..=n - len) {
            windows.push((s, len));
        }
    }
    windows.sort_unstable_by_key(|&(s, len)| (std::cmp::Reverse(len), s));
    windows.dedup();
    let mut taken: Vec<Range<usize>> = Vec::new();
    for (s, len) in windows {
        let w = s..s + len;
        if taken.iter().any(|t| t.start < w.end && w.start < t.end) {
            continue;
        }
        if bip39_valid(&idx[w.clone()]) {
            out.push(("bip39_seed_phrase", run[s].1..run[s + len - 1].2));
            taken.push(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Category, Mode, Scanner};

    fn found(text: &str) -> Vec<(&'static str, String)> {
        Scanner::new(Mode::Transcript)
            .scan_secrets(text)
            .findings
            .into_iter()
            .filter(|f| f.category == Category::Secret)
            .map(|f| (f.rule, text[f.span.unwrap()].to_string()))
            .collect()
    }

    fn noise(n: usize, seed: u64, alphabet: &[u8]) -> String {
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize] as char
            })
            .collect()
    }

    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const HEX: &[u8] = b"0123456789abcdef";

    #[test]
    fn every_spec_parses_and_every_family_has_a_literal() {
        for f in FAMILIES.iter() {
            assert!(!f.lits.is_empty(), "{}", f.id);
            assert!(f.lits.iter().all(|l| !l.is_empty()), "{}", f.id);
            if f.kind == Kind::Near {
                assert!(!f.parts.is_empty(), "{}", f.id);
                assert!(
                    f.lits.iter().all(|l| *l == l.to_ascii_lowercase()),
                    "{}",
                    f.id
                );
            }
        }
    }

    /// The embedded list is the published BIP-39 English wordlist (its SHA-256, one
    /// word a line, is the one the standard's repository publishes).
    #[test]
    fn the_wordlist_is_bip39_english() {
        let words = bip39_words();
        assert_eq!(words.len(), 2048);
        assert!(words.windows(2).all(|w| w[0] < w[1]));
        let file: String = words.iter().map(|w| format!("{w}\n")).collect();
        let hash: String = Sha256::digest(file.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hash,
            "2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda"
        );
    }

    #[test]
    fn seed_phrases_need_their_checksum() {
        let words = bip39_words();
        let at = |w: &str| words.iter().position(|x| x == w).unwrap();
        // BIP-39's first test vector: all-zero entropy, eleven times word 0 and the
        // checksum word.
        let mut idx = vec![0usize; 11];
        idx.push(at("about"));
        assert!(bip39_valid(&idx));
        assert!(!bip39_valid(&[0usize; 12]));
        let phrase: Vec<&str> = idx.iter().map(|&i| words[i].as_str()).collect();
        let phrase = phrase.join(" ");
        assert_eq!(found(&format!("restore with {phrase} please")).len(), 1);
        // Twelve list words with no valid checksum, and one list word repeated.
        let prose = "you will have to keep this simple and also make sure they know what we need";
        assert!(found(prose).is_empty(), "{prose}");
        assert!(found(&"ignore ".repeat(5000)).is_empty());
        // Capitalised or punctuated, it is a sentence, not a pasted phrase.
        assert!(found(&phrase.replace(' ', ", ")).is_empty());
    }

    #[test]
    fn age_keys_need_their_bech32_checksum() {
        // A key built from 32 zero bytes: its checksum computed here.
        let hrp = "age-secret-key-";
        let data = vec![0u8; 52];
        let mut values: Vec<u8> = hrp.bytes().map(|c| c >> 5).collect();
        values.push(0);
        values.extend(hrp.bytes().map(|c| c & 31));
        values.extend(&data);
        values.extend([0; 6]);
        let pm = bech32_polymod(&values) ^ 1;
        let mut all = data.clone();
        all.extend((0..6).map(|i| ((pm >> (5 * (5 - i))) & 31) as u8));
        let body: String = all.iter().map(|&d| BECH32[d as usize] as char).collect();
        let key = format!("{hrp}1{body}").to_ascii_uppercase();
        assert!(age_checksum(&key));
        let mut broken = key.clone().into_bytes();
        let last = broken.len() - 1;
        broken[last] = if broken[last] == b'Q' { b'P' } else { b'Q' };
        assert!(!age_checksum(&String::from_utf8(broken).unwrap()));
    }

    #[test]
    fn prefixed_tokens_keep_to_their_documented_shape() {
        let body = noise(36, 1, ALNUM);
        let npm = format!("npm_{body}");
        assert_eq!(
            found(&format!("it is {npm} now")),
            vec![("npm_token", npm.clone())]
        );
        // Inside a longer word, one character too many, a mask, a package setting.
        assert!(found(&format!("it is x{npm} now")).is_empty());
        assert!(found(&format!("it is {npm}Z now")).is_empty());
        assert!(found(&format!("it is npm_{} now", "x".repeat(36))).is_empty());
        assert!(found("set npm_config_registry first").is_empty());
        // Labelled as a sample on its line.
        assert!(found(&format!("example token: {npm}")).is_empty());
        // Hex bodies are keys whatever letters they hold.
        let dapi = format!("dapi{}", noise(32, 2, HEX));
        assert_eq!(found(&dapi).len(), 1, "{dapi}");
    }

    #[test]
    fn provider_words_must_start_a_word_and_tokens_look_random() {
        let hex = noise(35, 3, HEX);
        // "lob" inside "global" is no provider word.
        assert!(found(&format!("the global build live_{hex} ran")).is_empty());
        assert_eq!(found(&format!("the Lob build live_{hex} ran")).len(), 1);
        // A commit hash beside "aws" is no secret access key (no upper case).
        let sha = noise(40, 4, HEX);
        assert!(found(&format!("aws deploy at commit {sha}")).is_empty());
        let secret = noise(
            40,
            5,
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        );
        assert_eq!(found(&format!("aws deploy with {secret} today")).len(), 1);
    }

    #[test]
    fn bot_tokens_and_twilio_keys_by_shape() {
        let tg = format!("{}:AA{}", "1234567890", noise(33, 6, ALNUM));
        assert_eq!(
            found(&format!("bot {tg}")),
            vec![("telegram_bot_token", tg.clone())]
        );
        let url = format!("https://api.telegram.org/bot{tg}/sendMessage");
        assert_eq!(found(&url).len(), 1, "{url}");
        assert!(found("at 12:30:45 on 2026-12-06, 1234567890:short").is_empty());
        let sk = format!("SK{}", noise(32, 7, HEX));
        assert_eq!(found(&sk), vec![("twilio_key", sk.clone())]);
        assert!(found(&format!("SKU{}", noise(32, 8, HEX))).is_empty());
    }

    #[test]
    fn basic_auth_decodes_to_user_and_password() {
        // "deploy:" and fourteen random characters, base64.
        let creds = format!("deploy:{}", noise(14, 9, ALNUM));
        let b64 = {
            const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let bytes = creds.as_bytes();
            let mut out = String::new();
            for c in bytes.chunks(3) {
                let v = (u32::from(c[0]) << 16)
                    | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                    | u32::from(*c.get(2).unwrap_or(&0));
                for k in 0..4 {
                    out.push(if k <= c.len() {
                        A[((v >> (18 - 6 * k)) & 63) as usize] as char
                    } else {
                        '='
                    });
                }
            }
            out
        };
        let header = format!("Authorization: Basic {b64}");
        assert_eq!(found(&header).len(), 1, "{header}");
        assert!(found("a basic understanding of the basic building blocks").is_empty());
        assert!(
            found("Basic QUJDREVGR0hJSktMTU5PUA==").is_empty(),
            "no colon"
        );
    }
}
