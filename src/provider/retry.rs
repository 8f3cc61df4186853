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
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay_ms: 1_000,
            max_delay_ms: 30_000,
            idle_timeout_secs: 120,
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
    /// `deltas` (the partial response is to be dropped).
    pub async fn run<T, F, Fut>(&self, deltas: &DeltaSink, attempt: F) -> Result<T, ProviderError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ProviderError>>,
    {
        let mut failed = 0;
        attempt
            .retry(self.backoff())
            .sleep(tokio::time::sleep)
            .when(ProviderError::is_retryable)
            .adjust(|error, delay| delay.map(|delay| error.retry_after().unwrap_or(delay)))
            .notify(|error, delay| {
                failed += 1;
                let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                tracing::warn!(attempt = failed, delay_ms, %error, "retrying model call");
                let _ = deltas.send(StreamEvent::Retrying {
                    attempt: failed,
                    delay_ms,
                    reason: error.to_string(),
                });
            })
            .await
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
}
