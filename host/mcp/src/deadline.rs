//! A call's deadline, kept registered after the call so that the next
//! call's does not wake the runtime.
//!
//! tokio's time driver parks until its earliest timer. A timer registered
//! earlier than that wakes the parked driver (a write to its event fd and
//! a thread's wake-up), and with nothing else pending every call's
//! deadline is the earliest: on a stdio call of a few hundred
//! microseconds, that wake-up was 2 to 3 % of the call
//! (`docs/performance.md`, "The per-call deadline, and CPU beside wall
//! time"). Here each call's timer is kept after the call until the next
//! call of the same source replaces it. A later call's deadline (the same timeout, started later)
//! is then never the earliest, and registering it wakes nothing; the
//! driver wakes once when the kept deadline passes, which it ignores.
//!
//! Invariants: a call ends at its own deadline exactly as with
//! `tokio::time::timeout_at`; a kept timer wakes no task when it fires
//! (its waker is a no-op before it is kept); at most one timer is kept
//! per source, and [`Kept::clear`] drops it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Waker};

use tokio::time::{Instant, Sleep, sleep_until};

/// The last call's timer of one source.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    last: Mutex<Option<Pin<Box<Sleep>>>>,
}

impl Kept {
    /// Runs `call` until `deadline`: its output, or `None` at the
    /// deadline (the call is dropped then, as `timeout_at` drops it).
    /// The call is pinned by its caller: an `async fn` keeps its
    /// arguments and its locals apart, so a call taken by value would make
    /// this future twice the call's size.
    pub(crate) async fn within<F: Future>(
        &self,
        deadline: Instant,
        mut call: Pin<&mut F>,
    ) -> Option<F::Output> {
        let mut timer = Box::pin(sleep_until(deadline));
        let output = std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(output) = call.as_mut().poll(cx) {
                return std::task::Poll::Ready(Some(output));
            }
            timer.as_mut().poll(cx).map(|()| None)
        })
        .await;
        if output.is_some() {
            // The timer forgets this task before it is kept: when it fires,
            // it wakes nothing.
            let _ = timer.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            if let Ok(mut last) = self.last.lock() {
                // The one it replaces is dropped: deregistering wakes nothing.
                *last = Some(timer);
            }
        }
        output
    }

    /// Drops the kept timer (the source is shutting down).
    pub(crate) fn clear(&self) {
        if let Ok(mut last) = self.last.lock() {
            last.take();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;
    use std::time::Duration;

    #[tokio::test]
    async fn a_call_past_its_deadline_ends_there() {
        let kept = Kept::default();
        let deadline = Instant::now() + Duration::from_millis(50);
        let started = Instant::now();
        let output = kept
            .within(deadline, pin!(tokio::time::sleep(Duration::from_secs(60))))
            .await;
        assert!(output.is_none());
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(50) && took < Duration::from_secs(30),
            "{took:?}"
        );
        assert!(
            kept.last.lock().unwrap().is_none(),
            "a timer that fired is not kept"
        );
    }

    #[tokio::test]
    async fn a_call_in_time_keeps_its_timer_until_the_next() {
        let kept = Kept::default();
        let first = Instant::now() + Duration::from_secs(30);
        assert_eq!(kept.within(first, pin!(async { 7 })).await, Some(7));
        let deadline = |kept: &Kept| kept.last.lock().unwrap().as_ref().map(|t| t.deadline());
        assert_eq!(deadline(&kept), Some(first));
        tokio::time::sleep(Duration::from_millis(5)).await;
        let second = Instant::now() + Duration::from_secs(30);
        assert_eq!(kept.within(second, pin!(async { 8 })).await, Some(8));
        assert_eq!(
            deadline(&kept),
            Some(second),
            "the later timer replaced the first"
        );
        kept.clear();
        assert_eq!(deadline(&kept), None);
    }

    /// Counts the polls of the future it wraps.
    struct Polls<F> {
        count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        inner: Pin<Box<F>>,
    }

    impl<F: Future> Future for Polls<F> {
        type Output = F::Output;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> std::task::Poll<F::Output> {
            self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.as_mut().poll(cx)
        }
    }

    #[tokio::test]
    async fn a_kept_timer_that_fires_wakes_no_one() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let kept = Arc::new(Kept::default());
        let count = Arc::new(AtomicUsize::new(0));
        let (done, called) = tokio::sync::oneshot::channel();
        let task = {
            let kept = kept.clone();
            // A caller that goes on living (waiting for nothing) after its call.
            tokio::spawn(Polls {
                count: count.clone(),
                inner: Box::pin(async move {
                    let deadline = Instant::now() + Duration::from_millis(10);
                    let _ = done.send(kept.within(deadline, pin!(async { 1 })).await);
                    std::future::pending::<()>().await;
                }),
            })
        };
        assert_eq!(called.await.unwrap(), Some(1));
        tokio::task::yield_now().await;
        let before = count.load(Ordering::SeqCst);
        // Past the kept deadline: the driver fires it, into a no-op waker.
        tokio::time::sleep(Duration::from_millis(30)).await;
        tokio::task::yield_now().await;
        assert!(kept.last.lock().unwrap().as_ref().unwrap().is_elapsed());
        assert_eq!(
            count.load(Ordering::SeqCst),
            before,
            "the kept timer woke its caller"
        );
        task.abort();
    }

    /// An answer from another thread, 5 ms from now (long enough for the
    /// runtime to park first, on a loaded machine too).
    fn answer_soon() -> tokio::sync::oneshot::Receiver<u8> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            let _ = answer.send(1);
        });
        answered
    }

    /// How often a runtime's thread parked over 20 rounds of a wait
    /// without a deadline (as for a model's answer, or another server's)
    /// and a call with one: its deadline kept, or in `timeout_at`.
    fn parks(keep: bool) -> u64 {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let parked = |runtime: &tokio::runtime::Runtime| runtime.metrics().worker_park_count(0);
        let before = parked(&runtime);
        let calls = runtime.spawn(async move {
            let kept = Kept::default();
            for _ in 0..20 {
                answer_soon().await.unwrap();
                let deadline = Instant::now() + Duration::from_secs(30);
                if keep {
                    assert!(kept.within(deadline, pin!(answer_soon())).await.is_some());
                } else {
                    assert!(
                        tokio::time::timeout_at(deadline, answer_soon())
                            .await
                            .is_ok()
                    );
                }
            }
        });
        runtime.block_on(calls).unwrap();
        parked(&runtime) - before
    }

    #[test]
    fn a_later_deadline_does_not_wake_the_parked_driver() {
        let (with_kept, with_timeout) = (parks(true), parks(false));
        // Each wait parks the thread once (42 parks for the 40 waits). A deadline
        // that is the earliest timer wakes the driver, which parks once more
        // for nothing (61 with `timeout_at`: all but the first call's kept).
        assert!(
            with_kept + 10 <= with_timeout,
            "kept {with_kept} parks, timeout_at {with_timeout}"
        );
    }
}
