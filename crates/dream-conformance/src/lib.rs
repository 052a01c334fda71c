//! The one conformance suite every Dream store passes.
//!
//! Each rule of the store contract (`dream_core::store`) is a public async function
//! in [`rules`] taking an `Arc<dyn RecordStore>`. [`conformance_suite!`] turns a
//! factory `async fn() -> Fixture` into one plain `#[test]` per rule, each on its
//! own multi-thread runtime (so racing cases really race) with a fresh fixture.
//! [`process`] helps tests that need several OS processes; [`tls`] makes
//! throwaway certificate authorities for TLS tests.
//!
//! ```ignore
//! async fn make() -> dream_conformance::Fixture {
//!     dream_conformance::Fixture::new(std::sync::Arc::new(MyStore::new()), ())
//! }
//! dream_conformance::conformance_suite!(make);
//! ```

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

use dream_core::RecordStore;

pub mod process;
pub mod rules;
pub mod tls;

/// A store under test and whatever keeps its resources alive (a temp dir, a Redis
/// prefix, a server process). Dropping the fixture drops the store first, then the guard.
pub struct Fixture {
    /// The store under test.
    pub store: Arc<dyn RecordStore>,
    /// Keeps the store's resources alive until the rule ends.
    pub guard: Box<dyn Any + Send>,
}

impl Fixture {
    /// A fixture from a store and its guard.
    pub fn new(store: Arc<dyn RecordStore>, guard: impl Any + Send) -> Self {
        Fixture {
            store,
            guard: Box::new(guard),
        }
    }
}

/// Runs one rule against a fresh fixture on its own multi-thread runtime.
pub fn run<F, FFut, R, RFut>(factory: F, rule: R)
where
    F: FnOnce() -> FFut,
    FFut: Future<Output = Fixture>,
    R: FnOnce(Arc<dyn RecordStore>) -> RFut,
    RFut: Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("build a tokio runtime");
    runtime.block_on(async {
        let fixture = factory().await;
        let Fixture { store, guard } = fixture;
        rule(store).await;
        drop(guard);
    });
}

/// Emits `mod conformance` with one `#[test]` per rule of [`rules`], each running
/// against a fresh fixture from `$factory` (an `async fn() -> Fixture` in scope).
#[macro_export]
macro_rules! conformance_suite {
    ($factory:path) => {
        $crate::conformance_suite!(@emit $factory;
            round_trips_values,
            missing_key_reads_as_absent,
            matches_on_missing_key_conflicts,
            absent_on_present_key_conflicts,
            matches_with_wrong_version_conflicts,
            delete_of_missing_key_is_false,
            delete_removes_and_honours_preconditions,
            no_aba_after_delete_and_put,
            versions_are_never_reused,
            too_large_value_is_refused_and_nothing_written,
            ids_differing_in_case_are_distinct,
            list_is_sorted_and_paginated,
            list_limit_is_clamped,
            namespaces_are_isolated,
            namespaces_are_complete,
            concurrent_absent_puts_have_one_winner,
            concurrent_cas_increments_lose_nothing,
            lease_is_exclusive,
            fences_strictly_increase,
            expired_lease_is_taken_over_and_stale_fence_refused,
            renew_after_expiry_is_lock_lost,
            renew_keeps_the_fence_and_extends,
            release_reports_whether_still_held,
            fenced_delete_is_checked,
            fence_for_unknown_lock_is_refused,
            errors_never_display_values,
            info_is_consistent,
            batch_applies_puts_and_deletes,
            empty_batch_is_ok,
            batch_conflict_writes_nothing,
            batch_too_large_value_writes_nothing,
            batch_over_max_ops_is_refused,
            batch_duplicate_keys_are_refused,
            batch_with_lost_fence_writes_nothing,
            concurrent_batches_are_isolated,
            batch_round_trips_values,
            list_versions_matches_list,
            list_versions_limit_is_clamped_and_fresh,
            compact_keeps_live_records_and_drops_removed_ones,
            watch_changes_hears_writes
        );
    };
    (@emit $factory:path; $($rule:ident),* $(,)?) => {
        #[allow(missing_docs)]
        mod conformance {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $rule() {
                    $crate::run($factory, $crate::rules::$rule);
                }
            )*
        }
    };
}

#[cfg(test)]
mod tests {
    /// The files of `rules`, one per family of rules.
    const FAMILIES: [(&str, &str); 5] = [
        ("batches", include_str!("rules/batches.rs")),
        ("leases", include_str!("rules/leases.rs")),
        ("listing", include_str!("rules/listing.rs")),
        ("records", include_str!("rules/records.rs")),
        ("store", include_str!("rules/store.rs")),
    ];

    /// Every `pub async fn` of `rules` is listed in `conformance_suite!`.
    #[test]
    fn every_rule_is_in_the_suite() {
        let declared: Vec<&str> = include_str!("rules/mod.rs")
            .lines()
            .filter_map(|line| line.strip_prefix("mod ")?.strip_suffix(';'))
            .collect();
        let read: Vec<&str> = FAMILIES.iter().map(|(name, _)| *name).collect();
        assert_eq!(declared, read, "FAMILIES names every module of rules");
        let rules: String = FAMILIES.iter().map(|(_, text)| *text).collect();
        let lib = include_str!("lib.rs");
        let listed = lib
            .split("@emit $factory;")
            .nth(1)
            .and_then(|rest| rest.split(");").next())
            .expect("the macro's list");
        let mut missing = Vec::new();
        for line in rules.lines() {
            if let Some(rest) = line.strip_prefix("pub async fn ") {
                let name = rest.split('(').next().unwrap_or_default();
                if !listed.split(',').any(|item| item.trim() == name) {
                    missing.push(name.to_owned());
                }
            }
        }
        assert!(
            missing.is_empty(),
            "rules missing from conformance_suite!: {missing:?}"
        );
    }
}
