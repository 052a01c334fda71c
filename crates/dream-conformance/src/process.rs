//! Multi-process test helpers.
//!
//! A test re-executes its own binary as the child: the parent calls
//! [`ChildProcess::spawn`] with its test's name and a role; in the child the same
//! test function finds its role with [`child_role`] and does the child's part.
//! Dropping a [`ChildProcess`] sends SIGCONT then SIGKILL and reaps it, so a failed
//! or stopped child never hangs the suite.
//!
//! ```ignore
//! #[test]
//! fn two_processes() {
//!     if let Some(role) = child_role() {
//!         // child work; print READY for the parent; exit by returning
//!         return;
//!     }
//!     let mut child = ChildProcess::spawn("two_processes", "writer", &[("DIR", "/tmp/x")]).unwrap();
//!     assert!(child.wait(Duration::from_secs(60)).unwrap().success());
//! }
//! ```

use std::io::{self, BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

/// Environment variable carrying the child's role.
pub const ROLE_ENV: &str = "DREAM_TEST_CHILD_ROLE";

/// The role this process was started with, if it is a child.
pub fn child_role() -> Option<String> {
    std::env::var(ROLE_ENV).ok()
}

/// A child process running one test of the current test binary.
pub struct ChildProcess {
    child: Child,
    lines: Receiver<String>,
}

impl ChildProcess {
    /// Starts the current test binary running only `test_name` (its full libtest
    /// path, e.g. `module::test`), with `role` in [`ROLE_ENV`] and extra `envs`.
    /// The child's stdout is read line by line (see [`ChildProcess::wait_for_line`]);
    /// its stderr goes to the parent's.
    pub fn spawn(test_name: &str, role: &str, envs: &[(&str, &str)]) -> io::Result<Self> {
        let exe = std::env::current_exe()?;
        let mut command = Command::new(exe);
        command
            .args([
                test_name,
                "--exact",
                "--nocapture",
                "--test-threads=1",
                "--include-ignored",
            ])
            .env(ROLE_ENV, role)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (key, value) in envs {
            command.env(key, value);
        }
        let mut child = command.spawn()?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(ChildProcess { child, lines })
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the child prints a line containing `marker`; returns the line.
    pub fn wait_for_line(&mut self, marker: &str, timeout: Duration) -> io::Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(marker) => return Ok(line),
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no line with {marker:?}"),
                    ));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("child exited before {marker:?}"),
                    ));
                }
            }
        }
    }

    /// Every stdout line printed so far that was not consumed by `wait_for_line`.
    pub fn drain_lines(&mut self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// Waits for the child to exit, killing it after `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> io::Result<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                self.kill();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "child did not exit in time; killed",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Freezes the child (SIGSTOP).
    pub fn stop(&self) {
        self.signal(Signal::STOP);
    }

    /// Resumes a frozen child (SIGCONT).
    pub fn resume(&self) {
        self.signal(Signal::CONT);
    }

    /// Kills the child (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        self.signal(Signal::CONT);
        self.signal(Signal::KILL);
        let _ = self.child.wait();
    }

    fn signal(&self, signal: Signal) {
        if let Some(pid) = Pid::from_raw(self.child.id() as i32) {
            let _ = kill_process(pid, signal);
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}
