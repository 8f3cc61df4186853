//! Retries with exponential backoff and jitter, honouring `retry-after`.

use std::time::Duration;

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
    /// The wait before attempt `attempt + 1` (attempt counts from 1): the server's
    /// `retry-after` if it gave one, else `base * 2^(attempt-1)` capped, with up to
    /// 25% random jitter so clients do not retry in step.
    pub fn delay(&self, attempt: u32, error: &ProviderError) -> Duration {
        if let Some(after) = error.retry_after() {
            return after;
        }
        let exponential = self
            .base_delay_ms
            .saturating_mul(1u64 << (attempt.saturating_sub(1)).min(20))
            .min(self.max_delay_ms);
        let jitter = exponential / 4 * jitter_permille() / 1000;
        Duration::from_millis(exponential + jitter)
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    /// Run `attempt` until it succeeds, fails for good, or the attempts run out.
    pub async fn run<T, F, Fut>(&self, deltas: &DeltaSink, mut attempt: F) -> Result<T, ProviderError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ProviderError>>,
    {
        let mut tries = 1;
        loop {
            match attempt().await {
                Ok(value) => return Ok(value),
                Err(error) if error.is_retryable() && tries < self.max_attempts.max(1) => {
                    let delay = self.delay(tries, &error);
                    tracing::warn!(attempt = tries, delay_ms = delay.as_millis() as u64, %error, "retrying model call");
                    let _ = deltas.send(StreamEvent::Retrying {
                        attempt: tries,
                        delay_ms: delay.as_millis() as u64,
                        reason: error.to_string(),
                    });
                    tokio::time::sleep(delay).await;
                    tries += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// 0..1000 from the clock's low bits: enough spread for jitter, no RNG dependency.
fn jitter_permille() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    u64::from(nanos.wrapping_mul(2_654_435_761) % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_honours_retry_after() {
        let policy = RetryPolicy {
            max_attempts: 5,
            base_delay_ms: 100,
            max_delay_ms: 1_000,
            ..RetryPolicy::default()
        };
        let overloaded = ProviderError::Overloaded { message: String::new() };
        let first = policy.delay(1, &overloaded).as_millis();
        assert!((100..=125).contains(&first), "{first}");
        let third = policy.delay(3, &overloaded).as_millis();
        assert!((400..=500).contains(&third), "{third}");
        let capped = policy.delay(10, &overloaded).as_millis();
        assert!((1_000..=1_250).contains(&capped), "{capped}");
        let limited = ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(3)),
            message: String::new(),
        };
        assert_eq!(policy.delay(1, &limited), Duration::from_secs(3));
    }
}
