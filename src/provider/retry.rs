//! Retries with exponential backoff and jitter (`backon`), honouring `retry-after`.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};

use serde::{Deserialize, Serialize};

use super::error::ProviderError;
use super::{DeltaSink, StreamEvent};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
    /// Longest silence while waiting for a response's headers or its next bytes; then
    /// the attempt fails like a dropped connection (and is retried).
    pub idle_timeout_secs: u64,
    /// How long a server that is not up (connection refused, or 503 while it loads
    /// its model) is waited for: its attempts start over until this has passed, so a
    /// restarting server is not given up on after the few seconds `max_attempts` take.
    pub startup_wait_secs: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay_ms: 1_000,
            max_delay_ms: 30_000,
            idle_timeout_secs: 120,
            startup_wait_secs: 60,
        }
    }
}

impl RetryPolicy {
    /// The waits between attempts (`backon`): exponential from `base_delay_ms`,
    /// doubling, capped at `max_delay_ms`, each with up to as much again of random
    /// jitter so clients do not retry in step; `max_attempts - 1` of them.
    fn backoff(&self) -> ExponentialBuilder {
        ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(self.base_delay_ms))
            .with_max_delay(Duration::from_millis(self.max_delay_ms))
            .with_factor(2.0)
            .with_max_times(usize::try_from(self.max_attempts.max(1) - 1).unwrap_or(usize::MAX))
            .with_jitter()
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    /// Run `attempt` until it succeeds, fails for good, or the attempts run out. A
    /// server's `retry-after` replaces the backoff's wait; each retry is announced on
    /// `deltas` (the partial response is to be dropped). While the server is not up,
    /// the attempts start over until `startup_wait_secs` have passed.
    pub async fn run<T, F, Fut>(&self, deltas: &DeltaSink, mut attempt: F) -> Result<T, ProviderError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ProviderError>>,
    {
        let started = tokio::time::Instant::now();
        let startup_wait = Duration::from_secs(self.startup_wait_secs);
        let mut failed = 0;
        let announce = |failed: u32, error: &ProviderError, delay: Duration| {
            let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
            tracing::warn!(attempt = failed, delay_ms, %error, "retrying model call");
            let _ = deltas.send(StreamEvent::Retrying {
                attempt: failed,
                delay_ms,
                reason: error.to_string(),
            });
        };
        loop {
            let result = (&mut attempt)
                .retry(self.backoff())
                .sleep(tokio::time::sleep)
                .when(ProviderError::is_retryable)
                .adjust(|error, delay| delay.map(|delay| error.retry_after().unwrap_or(delay)))
                .notify(|error, delay| {
                    failed += 1;
                    announce(failed, error, delay);
                })
                .await;
            let delay = Duration::from_millis(self.max_delay_ms.max(self.base_delay_ms));
            match result {
                Err(error) if error.server_not_up() && started.elapsed() + delay < startup_wait => {
                    failed += 1;
                    announce(failed, &error, delay);
                    tokio::time::sleep(delay).await;
                }
                done => return done,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use backon::BackoffBuilder;

    use super::*;

    fn policy(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay_ms: 100,
            max_delay_ms: 1_000,
            ..RetryPolicy::default()
        }
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let delays: Vec<u128> = policy(12).backoff().build().map(|d| d.as_millis()).collect();
        assert_eq!(delays.len(), 11, "attempts in all, the first included");
        assert!((100..200).contains(&delays[0]), "{delays:?}");
        assert!((400..800).contains(&delays[2]), "{delays:?}");
        assert!(delays[9..].iter().all(|d| (1_000..2_000).contains(d)), "{delays:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_is_honoured_and_each_retry_announced() {
        let (deltas, mut announced) = tokio::sync::mpsc::unbounded_channel();
        let mut calls = 0;
        let started = tokio::time::Instant::now();
        let result: Result<(), _> = policy(3)
            .run(&deltas, || {
                calls += 1;
                async {
                    Err(ProviderError::RateLimited {
                        retry_after: Some(Duration::from_secs(3)),
                        message: "slow down".into(),
                    })
                }
            })
            .await;
        assert!(matches!(result, Err(ProviderError::RateLimited { .. })));
        assert_eq!(calls, 3);
        assert_eq!(started.elapsed(), Duration::from_secs(6), "two waits of retry-after");
        for attempt in 1..=2 {
            match announced.try_recv() {
                Ok(StreamEvent::Retrying {
                    attempt: n, delay_ms, ..
                }) => assert_eq!((n, delay_ms), (attempt, 3_000)),
                other => panic!("{other:?}"),
            }
        }
        let mut once = 0;
        let unauthorised: Result<(), _> = policy(3)
            .run(&deltas, || {
                once += 1;
                async {
                    Err(ProviderError::Auth {
                        status: 401,
                        message: "no".into(),
                    })
                }
            })
            .await;
        assert!(unauthorised.is_err());
        assert_eq!(once, 1, "not retryable: tried once");
    }

    /// A restarting server: 3 attempts take well under a second here, but a server
    /// that refuses connections is waited for until `startup_wait_secs`, and one that
    /// comes up meanwhile is answered; other failures keep their few attempts.
    #[tokio::test(start_paused = true)]
    async fn a_server_that_is_not_up_is_waited_for_until_the_startup_wait() {
        let (deltas, mut announced) = tokio::sync::mpsc::unbounded_channel();
        let refused = || ProviderError::NotUp("connection refused at 127.0.0.1:8080 (is the server running?)".into());
        let policy = RetryPolicy {
            startup_wait_secs: 10,
            ..policy(3)
        };
        let started = tokio::time::Instant::now();
        let mut calls = 0;
        let result: Result<(), _> = policy
            .run(&deltas, || {
                calls += 1;
                async { Err(refused()) }
            })
            .await;
        assert!(matches!(result, Err(ProviderError::NotUp(_))));
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(8) && waited < Duration::from_secs(11),
            "{waited:?}"
        );
        assert!(calls > 3, "more than max_attempts while the server is not up: {calls}");
        let mut numbers = Vec::new();
        while let Ok(StreamEvent::Retrying { attempt, .. }) = announced.try_recv() {
            numbers.push(attempt);
        }
        assert_eq!(
            numbers,
            (1..calls).collect::<Vec<u32>>(),
            "every retry said, numbered on"
        );

        // It comes up on the 6th attempt (past max_attempts): answered.
        let mut calls = 0;
        let result = policy
            .run(&deltas, || {
                calls += 1;
                let up = calls >= 6;
                async move { if up { Ok("hello") } else { Err(refused()) } }
            })
            .await;
        assert_eq!(result.unwrap(), "hello");

        // A 500 is not a server starting: its 3 attempts, then the error.
        let mut calls = 0;
        let result: Result<(), _> = policy
            .run(&deltas, || {
                calls += 1;
                async {
                    Err(ProviderError::Server {
                        status: 500,
                        message: "boom".into(),
                    })
                }
            })
            .await;
        assert!(result.is_err());
        assert_eq!(calls, 3);
    }
}
