//! Work running on threads of its own, by key: the kernels a scanner
//! compiles in the background on first use (see
//! [`Tuning::background_compile`](crate::Tuning::background_compile)).
//!
//! A key has at most one job at a time. A job that fails leaves its key
//! marked [`Job::Failed`] until someone [`Jobs::forget`]s it: the runtime
//! then does the same work in the foreground, where the error reaches the
//! caller, so a failure in the background is never silent.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Condvar, Mutex, MutexGuard};

/// The state of a key's job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Job {
    /// Its thread has not finished.
    Running,
    /// It finished with an error.
    Failed,
}

/// Jobs by key, and a condition variable signalled whenever one ends.
pub(crate) struct Jobs<K> {
    state: Mutex<HashMap<K, Job>>,
    ended: Condvar,
}

impl<K: Hash + Eq + Clone + Send + 'static> Jobs<K> {
    /// No jobs.
    pub(crate) fn new() -> Self {
        Jobs {
            state: Mutex::new(HashMap::new()),
            ended: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, Job>> {
        // A job never panics while holding the lock (it runs unlocked), so
        // a poisoned map is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The state of `key`'s job; `None` when it has none (never had one,
    /// or it succeeded, or it was forgotten).
    pub(crate) fn state(&self, key: &K) -> Option<Job> {
        self.lock().get(key).copied()
    }

    /// Runs `work` on a new thread as `key`'s job, unless `key` has one
    /// already (running or failed). Returns whether it started; `false`
    /// also when the thread could not be spawned.
    pub(crate) fn start<E>(
        &'static self,
        key: K,
        work: impl FnOnce() -> Result<(), E> + Send + 'static,
    ) -> bool {
        let mut state = self.lock();
        if state.contains_key(&key) {
            return false;
        }
        state.insert(key.clone(), Job::Running);
        drop(state);
        let job_key = key.clone();
        let spawned = std::thread::Builder::new()
            .name("gpu-scan-compile".into())
            .spawn(move || {
                // A panic counts as a failure, and still ends the job, so
                // that nobody waits for it forever.
                let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
                    .map(|r| r.is_ok())
                    .unwrap_or(false);
                let mut state = self.lock();
                if ok {
                    state.remove(&job_key);
                } else {
                    state.insert(job_key, Job::Failed);
                }
                drop(state);
                self.ended.notify_all();
            });
        if spawned.is_err() {
            self.lock().remove(&key);
            self.ended.notify_all();
            return false;
        }
        true
    }

    /// Forgets `key`'s failed job (a running one stays).
    pub(crate) fn forget(&self, key: &K) {
        let mut state = self.lock();
        if state.get(key) == Some(&Job::Failed) {
            state.remove(key);
        }
    }

    /// Waits until no job whose key `matches` is running.
    pub(crate) fn wait(&self, matches: impl Fn(&K) -> bool) {
        let mut state = self.lock();
        while state
            .iter()
            .any(|(k, job)| *job == Job::Running && matches(k))
        {
            state = self.ended.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::sync::{Arc, OnceLock};
    use std::time::Duration;

    fn jobs() -> &'static Jobs<(u32, u32)> {
        static JOBS: OnceLock<Jobs<(u32, u32)>> = OnceLock::new();
        JOBS.get_or_init(Jobs::new)
    }

    #[test]
    fn one_job_per_key_and_waiting_ends_when_it_does() {
        let (release, released) = mpsc::channel::<()>();
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        assert!(jobs().start((1, 0), move || {
            released.recv().unwrap();
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<(), ()>(())
        }));
        assert_eq!(jobs().state(&(1, 0)), Some(Job::Running));
        // A second job of the same key does not start.
        assert!(!jobs().start((1, 0), || -> Result<(), ()> { panic!("never runs") }));
        // Waiting for other keys does not wait for it.
        jobs().wait(|k| k.0 == 2);
        let waiter = std::thread::spawn(|| jobs().wait(|k| k.0 == 1));
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "waits while the job runs");
        release.send(()).unwrap();
        waiter.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(jobs().state(&(1, 0)), None, "a success leaves nothing");
    }

    #[test]
    fn a_failure_stays_until_forgotten_and_ends_the_wait() {
        assert!(jobs().start((3, 0), || Err::<(), _>("no compiler")));
        jobs().wait(|k| k.0 == 3);
        assert_eq!(jobs().state(&(3, 0)), Some(Job::Failed));
        assert!(
            !jobs().start((3, 0), || Ok::<(), ()>(())),
            "failed, not forgotten"
        );
        jobs().forget(&(3, 0));
        assert_eq!(jobs().state(&(3, 0)), None);

        assert!(jobs().start((3, 1), || -> Result<(), ()> { panic!("a bug") }));
        jobs().wait(|k| k.0 == 3);
        assert_eq!(
            jobs().state(&(3, 1)),
            Some(Job::Failed),
            "a panic is a failure"
        );
    }

    #[test]
    fn forgetting_leaves_a_running_job() {
        let (release, released) = mpsc::channel::<()>();
        assert!(jobs().start((4, 0), move || {
            released.recv().unwrap();
            Ok::<(), ()>(())
        }));
        jobs().forget(&(4, 0));
        assert_eq!(jobs().state(&(4, 0)), Some(Job::Running));
        release.send(()).unwrap();
        jobs().wait(|k| k.0 == 4);
        assert_eq!(jobs().state(&(4, 0)), None);
    }
}
