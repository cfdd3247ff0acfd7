//! The wall-clock deadline of one plugin call, armed only if the call waits.
//!
//! Owns [`within`]: run a future to completion or until its deadline, like
//! `tokio::time::timeout`, but without registering a timer up front. Almost
//! every plugin call finishes in its first poll: the guest runs on its fiber
//! from start to end unless it parks in an async host import (`http.fetch`,
//! a WASI wait) or yields at an epoch tick (`engine::TICK`). Setting up a
//! tokio timer for those calls cost about 0.1 µs each, a tenth of the fixed
//! cost of entering a guest, so the timer is created on the first `Pending`
//! instead, with the deadline counted from the start of the call. A call that
//! parks is bounded exactly as before.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// The deadline passed before the future finished.
#[derive(Debug)]
pub struct Elapsed;

/// `future`'s output, or [`Elapsed`] once `wall` has passed since this was
/// first polled. The caller pins the future in its own frame (`pin!`) and
/// drops it when the deadline fires: taking it by value would store it twice
/// in the calling future, and plugin call futures are a few KB.
pub async fn within<F: Future>(wall: Duration, mut future: Pin<&mut F>) -> Result<F::Output, Elapsed> {
    let start = Instant::now();
    let mut timer: Option<Pin<Box<Sleep>>> = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        // First `Pending`: only now is a timer worth its cost.
        let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(start + wall)));
        timer.as_mut().poll(cx).map(|()| Err(Elapsed))
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::pin::pin;

    use super::*;

    #[tokio::test]
    async fn a_ready_future_needs_no_timer() {
        assert_eq!(within(Duration::ZERO, pin!(async { 7 })).await.unwrap(), 7);
    }

    #[tokio::test]
    async fn a_parked_future_is_stopped_at_the_deadline() {
        let start = std::time::Instant::now();
        let parked = pin!(std::future::pending::<()>());
        assert!(within(Duration::from_millis(30), parked).await.is_err());
        assert!(start.elapsed() >= Duration::from_millis(30));
    }

    #[tokio::test]
    async fn a_future_that_finishes_after_waiting_returns_its_output() {
        let slow = pin!(async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            "done"
        });
        assert_eq!(within(Duration::from_secs(5), slow).await.unwrap(), "done");
    }
}
