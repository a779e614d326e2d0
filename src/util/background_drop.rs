//! Freeing large values off the caller's thread.
//!
//! A compiled grammar holds an expression tree, automata and cache entries: tens of thousands of
//! small allocations, milliseconds to free for a large schema. A full grammar cache evicts one at
//! every insertion, and freeing it inline charged that time to the compile that caused the
//! eviction, a first mask that had nothing to do with it. One thread frees such values instead.
//! Freeing needs no result and no order, so nothing waits for it; a queue of [`QUEUED`] values
//! bounds the memory held when freeing falls behind (beyond it, the caller frees inline, as
//! without the thread).

use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::OnceLock;

/// A value to free.
type Garbage = Box<dyn Send>;

/// Values queued beyond this many are freed by the caller.
const QUEUED: usize = 64;

/// The queue of the freeing thread, started on first use; `None` when the thread could not
/// start (the caller frees inline).
fn queue() -> Option<&'static SyncSender<Garbage>> {
    static QUEUE: OnceLock<Option<SyncSender<Garbage>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (sender, receiver) = sync_channel::<Garbage>(QUEUED);
            let free = move || receiver.into_iter().for_each(drop);
            std::thread::Builder::new().name("maskforge-free".into()).spawn(free).ok()?;
            Some(sender)
        })
        .as_ref()
}

/// Drops `value` on the freeing thread, or here when that thread is behind or could not start.
pub fn drop_in_background<T: Send + 'static>(value: T) {
    let Some(queue) = queue() else { return drop(value) };
    match queue.try_send(Box::new(value)) {
        Ok(()) => {}
        Err(TrySendError::Full(value) | TrySendError::Disconnected(value)) => drop(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Counts its drops, and on which thread they ran.
    struct Counted(Arc<AtomicUsize>, Arc<std::sync::Mutex<Vec<std::thread::ThreadId>>>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.lock().unwrap().push(std::thread::current().id());
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn every_value_is_dropped_once_off_the_caller_when_the_queue_has_room() {
        let (drops, threads) = (Arc::new(AtomicUsize::new(0)), Arc::new(std::sync::Mutex::new(Vec::new())));
        let n = 3 * QUEUED;
        for _ in 0..n {
            drop_in_background(Counted(Arc::clone(&drops), Arc::clone(&threads)));
        }
        let start = Instant::now();
        while drops.load(Ordering::SeqCst) < n && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(drops.load(Ordering::SeqCst), n, "each value dropped exactly once");
        let here = std::thread::current().id();
        let elsewhere = threads.lock().unwrap().iter().filter(|&&t| t != here).count();
        assert!(elsewhere > 0, "the freeing thread dropped some");
    }
}
