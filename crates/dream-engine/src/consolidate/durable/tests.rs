use super::*;

/// The offline reading of one sentence: not passing, and durable.
fn states(sentence: &str, names_something: bool) -> bool {
    !passing(sentence) && is_durable(sentence, names_something)
}

#[test]
fn statements_without_trigger_words_are_durable() {
    for s in [
        "Customer emails go out through Postmark",
        "Feature flags live in LaunchDarkly",
        "We deploy the billing service with Nomad, never Kubernetes",
        "deploy freeze every year from Dec 20 to Jan 3",
        "Test coverage must stay above 80% on the core package",
        "Go services use chi for routing, not gin",
        "No ORMs in the reporting service, raw SQL only",
        "Nie pijam alkoholu",
        "I'm allergic to peanuts",
        "certs are issued by Let's Encrypt through cert-manager",
    ] {
        assert!(states(s, true), "{s}");
    }
}

#[test]
fn questions_requests_status_and_chatter_are_not() {
    for s in [
        "what does set -euo pipefail actually do",
        "how do I revert the last commit?",
        "run the tests again",
        "Please convert this loop into a list comprehension",
        "can you rename this function to parse_config",
        "I'm looking at the logs now",
        "still waiting on CI",
        "ugh what a day",
        "this bug is driving me nuts",
        "honestly computers were a mistake 😂",
        "npm ERR! code ERESOLVE",
        "I'm so tired",
        "let's wrap this PR up",
    ] {
        assert!(!states(s, false), "{s}");
    }
}

#[test]
fn what_is_true_only_now_or_not_yet_decided_passes_whatever_its_shape() {
    for s in [
        "we should maybe switch the queue to NATS",
        "Priya thinks we should never use ORMs",
        "according to the wiki the API key rotates monthly",
        "meine Chefin meinte, wir sollten Svelte nehmen",
        "the nightly build failed on the arm runner",
        "I'm at the dentist so replies will be slow",
        "standup is cancelled today",
        "Rebuilding the docker image now",
        "Running the migration on staging at the moment",
        "the deploy uses the old key at the moment, rotate it later",
        "Still chasing that flaky integration test",
        "I pushed the hotfix to staging",
        "Always use double quotes in this file please",
        "Write a regex that matches every ISO date",
        "ValueError: invalid literal for int() with base 10",
        "at Server.handle (/app/server.js:88:17)",
        "HTTP/2 403 Forbidden",
        "PID USER TIME COMMAND STATE",
        "terraform is so cursed lol",
        "I have a call in 10 minutes",
    ] {
        assert!(passing(s), "{s}");
    }
    for s in [
        "We deploy the billing service with Nomad, never Kubernetes",
        "from now on answer in German",
        "We moved from Jenkins to GitHub Actions last year",
        "we use pnpm now",
        "Error tracking goes to Sentry",
        "in this repo we indent with tabs",
        "Standup is at 9:30 CET every weekday",
        "My daughter is allergic to sesame",
    ] {
        assert!(!passing(s), "{s}");
    }
}

#[test]
fn a_negation_a_choice_a_pursuit_and_a_condition_are_statements() {
    for s in [
        "no tabs in yaml files",
        "no me gusta el cilantro",
        "vim over emacs",
        "I'm studying for the bar exam in July",
        "we're saving for a new car by 2028",
        "I'm learning Rust on the side",
        "when writing bash, use set -euo pipefail",
        "quand tu écris du SQL, mets les mots-clés en majuscules",
        "when reviewing PRs flag missing tests first",
    ] {
        assert!(!passing(s) && is_durable(s, false), "{s}");
    }
    for s in [
        "no worries at all",
        "no i meant the other file",
        "when you're done, run the linter",
        "when it finishes, ping me",
        "your last reply was way too long",
        "resume este correo en dos líneas",
        "I'm reading the changelog",
    ] {
        assert!(passing(s) || !is_durable(s, false), "{s}");
    }
}

#[test]
fn events_moods_and_the_moment_in_any_language_pass() {
    for s in [
        "the dog just ate my sandwich",
        "estoy revisando los logs ahora",
        "sto ancora scrivendo il report",
        "so tired of this flaky test",
        "it's been snowing all week",
        "the api is down since 10:40",
        "apparently the new office opens in March",
        "my brother keeps saying I should learn Go",
        "Feeling great about the launch",
        "deploying the fix rn",
    ] {
        assert!(passing(s), "{s}");
    }
    for s in [
        "we just moved to Lisbon",
        "we use Postgres since 2019",
        "from tomorrow on, deploys need two approvals",
    ] {
        assert!(!passing(s), "{s}");
    }
    for s in [
        "2025-01-02 10:11:12 INFO started worker",
        "Fehler: Datei nicht gefunden",
        "[rejected] feature -> feature (non-fast-forward)",
        "const ids = rows.map((r) => r.id)",
        "ERROR 1 at LINE 3: SELECT name FROM users",
    ] {
        assert!(looks_pasted(s), "{s}");
    }
}

#[test]
fn thanks_wants_and_what_is_on_screen_are_not_statements() {
    for s in [
        "thanks so much for the 2 hour pairing session",
        "merci pour le script de migration vers Postgres 16",
        "I need a bash one-liner to count lines in src",
        "the query above returns duplicates for order 42",
        "Hazme un resumen de la reunión",
    ] {
        assert!(passing(s) || !is_durable(s, true), "{s}");
    }
    for s in [
        "dark mode only",
        "I'm off for all of August",
        "I need eight hours of sleep or I'm useless",
    ] {
        assert!(!passing(s) && is_durable(s, false), "{s}");
    }
    for s in [
        "Overwhelmed by the migration tickets",
        "appreciate it, the build is green",
    ] {
        assert!(passing(s) || !is_durable(s, false), "{s}");
    }
    for s in [
        "Build finished with 3 errors and 12 warnings",
        "Upload failed error: quota exceeded for bucket logs",
        "result = client.fetch(url, timeout=5)",
        "app.workers.sync.SyncTimeout: job took too long",
        "Subject: Q3 planning moved to Thursday",
    ] {
        assert!(looks_pasted(s), "{s}");
    }
}
