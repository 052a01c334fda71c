//! Named crash points for crash tests.
//!
//! With the `failpoints` feature, `failpoint("name")` kills the current process
//! with SIGKILL when the environment variable `DREAM_FAILPOINT` equals `name`,
//! so a test can stop a child process at an exact step instead of sleeping and
//! hoping. Without the feature it compiles to nothing.

/// Environment variable that selects the failpoint to crash at.
pub const FAILPOINT_ENV: &str = "DREAM_FAILPOINT";

/// Crashes the process here if this failpoint is selected (feature `failpoints`).
#[inline]
pub fn failpoint(name: &str) {
    #[cfg(feature = "failpoints")]
    if std::env::var(FAILPOINT_ENV).is_ok_and(|selected| selected == name) {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        // SIGKILL cannot be caught; this line is never reached.
        std::process::abort();
    }
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
}
