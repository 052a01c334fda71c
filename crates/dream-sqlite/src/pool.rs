//! A small pool of read connections. It is used only from blocking threads
//! (`spawn_blocking`), so waiting on its condition variable never stalls a
//! tokio worker.

use std::ops::Deref;
use std::sync::{Condvar, Mutex, MutexGuard};

use rusqlite::Connection;

type Opener = Box<dyn Fn() -> rusqlite::Result<Connection> + Send + Sync>;

/// Up to `max` connections, opened on first need and reused.
pub(crate) struct Pool {
    state: Mutex<State>,
    returned: Condvar,
    open: Opener,
    max: usize,
}

struct State {
    idle: Vec<Connection>,
    opened: usize,
}

impl Pool {
    /// An empty pool that opens at most `max` (at least one) connections with `open`.
    pub(crate) fn new(max: usize, open: Opener) -> Self {
        Pool {
            state: Mutex::new(State {
                idle: Vec::new(),
                opened: 0,
            }),
            returned: Condvar::new(),
            open,
            max: max.max(1),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection: an idle one, a new one while under `max`, or the next one
    /// returned. Blocks; call only from a blocking thread.
    pub(crate) fn get(&self) -> rusqlite::Result<Pooled<'_>> {
        let mut state = self.state();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(Pooled {
                    pool: self,
                    conn: Some(conn),
                });
            }
            if state.opened < self.max {
                state.opened += 1;
                drop(state);
                return match (self.open)() {
                    Ok(conn) => Ok(Pooled {
                        pool: self,
                        conn: Some(conn),
                    }),
                    Err(err) => {
                        self.state().opened -= 1;
                        self.returned.notify_one();
                        Err(err)
                    }
                };
            }
            state = self.returned.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Takes every idle connection out of the pool (for closing).
    pub(crate) fn drain(&self) -> Vec<Connection> {
        let mut state = self.state();
        let idle = std::mem::take(&mut state.idle);
        state.opened -= idle.len();
        idle
    }
}

/// A connection on loan; goes back to the pool when dropped.
pub(crate) struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Connection>,
}

impl Deref for Pooled<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
            .as_ref()
            .expect("a loaned connection is present until drop")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let mut state = self.pool.state();
            if conn.is_autocommit() {
                state.idle.push(conn);
            } else {
                // A read left a transaction open (it never should): do not reuse it.
                state.opened -= 1;
                drop(state);
                drop(conn);
            }
            self.pool.returned.notify_one();
        }
    }
}
