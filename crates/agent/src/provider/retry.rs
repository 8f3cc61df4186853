//! Retries with exponential backoff and jitter (`backon`), honouring `retry-after`.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};

use serde::{Deserialize, Serialize};

use super::error::ProviderError;
use super::{DeltaSink, StreamEvent};

/// How often a server that is not up is asked whether it answers now: a request waits
/// at most this long after the server comes up.
pub const HEALTH_POLL: Duration = Duration::from_millis(250);

/// How often a wait for a server that is not up is said again.
const WAIT_SAID_EVERY: Duration = Duration::from_secs(10);

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

    /// How long a server that is not up is waited for.
    pub fn startup_wait(&self) -> Duration {
        Duration::from_secs(self.startup_wait_secs)
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }

    /// Run `attempt` until it succeeds, fails for good, or the attempts run out. A
    /// server's `retry-after` replaces the backoff's wait; each retry is announced on
    /// `deltas` (the partial response is to be dropped). While the server is not up,
    /// `server.answers()` is polled every [`HEALTH_POLL`] and the attempt goes as soon
    /// as it says so, until `startup_wait_secs` have passed. After a collision (another
    /// request took the server's shared cache) the retry waits until `server.idle()`
    /// says no request runs, so that it does not collide again.
    pub async fn run<T, F, Fut>(
        &self,
        deltas: &DeltaSink,
        mut attempt: F,
        server: &(impl ServerProbe + ?Sized),
    ) -> Result<T, ProviderError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ProviderError>>,
    {
        let started = tokio::time::Instant::now();
        let startup_wait = Duration::from_secs(self.startup_wait_secs);
        let mut failed = 0;
        let mut collisions = 0;
        let announce = |failed: u32, reason: String, delay: Duration| {
            let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
            tracing::warn!(attempt = failed, delay_ms, %reason, "retrying model call");
            let _ = deltas.send(StreamEvent::Retrying {
                attempt: failed,
                delay_ms,
                reason,
            });
        };
        loop {
            let result = (&mut attempt)
                .retry(self.backoff())
                .sleep(tokio::time::sleep)
                // A server that is not up, or busy with a request that collided with
                // this one, is polled below, not slept on; with no startup wait, one
                // that is not up is retried as any network error.
                .when(|error| {
                    error.is_retryable() && (startup_wait.is_zero() || !error.server_not_up()) && !error.is_collision()
                })
                .adjust(|error, delay| delay.map(|delay| error.retry_after().unwrap_or(delay)))
                .notify(|error, delay| {
                    failed += 1;
                    announce(failed, error.to_string(), delay);
                })
                .await;
            match result {
                Err(error) if error.server_not_up() && started.elapsed() + HEALTH_POLL < startup_wait => {
                    // Said at once and every WAIT_SAID_EVERY: the wait is never silent.
                    let mut said_at: Option<tokio::time::Instant> = None;
                    loop {
                        if said_at.is_none_or(|at| at.elapsed() >= WAIT_SAID_EVERY) {
                            failed += 1;
                            let left = startup_wait.saturating_sub(started.elapsed());
                            announce(failed, format!("{error}; waiting for it to answer"), left);
                            said_at = Some(tokio::time::Instant::now());
                        }
                        tokio::time::sleep(HEALTH_POLL).await;
                        if started.elapsed() + HEALTH_POLL >= startup_wait || server.answers().await {
                            break;
                        }
                    }
                }
                Err(error) if error.is_collision() && collisions + 1 < self.max_attempts => {
                    collisions += 1;
                    failed += 1;
                    self.wait_until_idle(server, collisions, |reason, delay| {
                        announce(failed, format!("{error}; {reason}"), delay)
                    })
                    .await;
                }
                done => return done,
            }
        }
    }

    /// After the `collisions`th collision: wait until no request runs on the server
    /// (its slots polled every [`HEALTH_POLL`], the wait said at once and every
    /// [`WAIT_SAID_EVERY`], at most `idle_timeout_secs`), or, where it does not say,
    /// the backoff's wait for that attempt.
    async fn wait_until_idle(
        &self,
        server: &(impl ServerProbe + ?Sized),
        collisions: u32,
        mut say: impl FnMut(&str, Duration),
    ) {
        let waited = tokio::time::Instant::now();
        let mut said_at: Option<tokio::time::Instant> = None;
        loop {
            match server.idle().await {
                Some(true) => {
                    if said_at.is_none() {
                        say("the server is free now; trying again", Duration::ZERO);
                    }
                    return;
                }
                Some(false) if waited.elapsed() < self.idle_timeout() => {
                    if said_at.is_none_or(|at| at.elapsed() >= WAIT_SAID_EVERY) {
                        let left = self.idle_timeout().saturating_sub(waited.elapsed());
                        say("waiting for the other request to finish", left);
                        said_at = Some(tokio::time::Instant::now());
                    }
                    tokio::time::sleep(HEALTH_POLL).await;
                }
                Some(false) => return,
                None => {
                    let exponent = collisions.saturating_sub(1).min(16);
                    let delay = Duration::from_millis(self.base_delay_ms.saturating_mul(1 << exponent))
                        .min(Duration::from_millis(self.max_delay_ms));
                    say("trying again after a wait", delay);
                    tokio::time::sleep(delay).await;
                    return;
                }
            }
        }
    }
}

/// What the retries ask of the server between attempts.
pub trait ServerProbe: Sync {
    /// Whether it answers now (while it was not up).
    fn answers(&self) -> impl std::future::Future<Output = bool> + Send;
    /// Whether no request runs on it now, where it says (`None` where it does not).
    fn idle(&self) -> impl std::future::Future<Output = Option<bool>> + Send;
}

#[cfg(test)]
mod tests {
    use backon::BackoffBuilder;

    use super::*;

    /// A server for the tests: it answers from `up_at` and runs another request until
    /// `idle_at` (both from `started`); with no `idle_at` it does not say.
    struct Probe {
        started: tokio::time::Instant,
        up_at: Duration,
        idle_at: Option<Duration>,
    }

    impl Probe {
        fn up() -> Self {
            Probe::up_from(Duration::ZERO)
        }

        fn up_from(up_at: Duration) -> Self {
            Probe {
                started: tokio::time::Instant::now(),
                up_at,
                idle_at: Some(Duration::ZERO),
            }
        }
    }

    impl ServerProbe for Probe {
        fn answers(&self) -> impl std::future::Future<Output = bool> + Send {
            std::future::ready(self.started.elapsed() >= self.up_at)
        }

        fn idle(&self) -> impl std::future::Future<Output = Option<bool>> + Send {
            std::future::ready(self.idle_at.map(|at| self.started.elapsed() >= at))
        }
    }

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
            .run(
                &deltas,
                || {
                    calls += 1;
                    async {
                        Err(ProviderError::RateLimited {
                            retry_after: Some(Duration::from_secs(3)),
                            message: "slow down".into(),
                        })
                    }
                },
                &Probe::up(),
            )
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
            .run(
                &deltas,
                || {
                    once += 1;
                    async {
                        Err(ProviderError::Auth {
                            status: 401,
                            message: "no".into(),
                        })
                    }
                },
                &Probe::up(),
            )
            .await;
        assert!(unauthorised.is_err());
        assert_eq!(once, 1, "not retryable: tried once");
    }

    /// With no startup wait (`provider.retry.startup_wait_secs = 0`) a refused
    /// connection is retried as any network error: `max_attempts` tries, with the
    /// backoff between them, each said.
    #[tokio::test(start_paused = true)]
    async fn with_no_startup_wait_a_refused_connection_is_retried_as_a_network_error() {
        let (deltas, mut announced) = tokio::sync::mpsc::unbounded_channel();
        let policy = RetryPolicy {
            startup_wait_secs: 0,
            ..policy(3)
        };
        let mut calls = 0;
        let result: Result<(), _> = policy
            .run(
                &deltas,
                || {
                    calls += 1;
                    async {
                        Err(ProviderError::NotUp(
                            "connection refused at 127.0.0.1:9 (is the server running?)".into(),
                        ))
                    }
                },
                &Probe::up_from(Duration::from_secs(3_600)),
            )
            .await;
        assert!(matches!(result, Err(ProviderError::NotUp(_))));
        assert_eq!(calls, 3, "tried max_attempts times");
        let said: Vec<String> = std::iter::from_fn(|| announced.try_recv().ok())
            .filter_map(|event| match event {
                StreamEvent::Retrying { reason, .. } => Some(reason),
                _ => None,
            })
            .collect();
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said.iter()
                .all(|reason| reason.contains("connection refused at 127.0.0.1:9")),
            "{said:?}"
        );
    }

    /// A restarting server is not given up on after the few seconds `max_attempts`
    /// take: its health is polled until `startup_wait_secs`, and the request goes as
    /// soon as it answers (not after a backoff's sleep); other failures keep their few
    /// attempts.
    #[tokio::test(start_paused = true)]
    async fn a_server_that_is_not_up_is_polled_and_asked_as_soon_as_it_answers() {
        let (deltas, mut announced) = tokio::sync::mpsc::unbounded_channel();
        let refused = || ProviderError::NotUp("connection refused at 127.0.0.1:8080 (is the server running?)".into());
        let policy = RetryPolicy {
            startup_wait_secs: 10,
            ..policy(3)
        };
        let started = tokio::time::Instant::now();
        let mut calls = 0;
        let result: Result<(), _> = policy
            .run(
                &deltas,
                || {
                    calls += 1;
                    async { Err(refused()) }
                },
                &Probe::up_from(Duration::from_secs(3_600)),
            )
            .await;
        assert!(matches!(result, Err(ProviderError::NotUp(_))));
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(9_500) && waited <= Duration::from_secs(10),
            "{waited:?}"
        );
        assert_eq!(
            calls, 2,
            "asked at the start and once more at the end of the wait, not between"
        );
        assert!(matches!(
            announced.try_recv(),
            Ok(StreamEvent::Retrying { attempt: 1, .. })
        ));
        assert!(announced.try_recv().is_err(), "the wait is said once");

        // Healthy at +10.6 s: the request goes within a poll of it, not 10 s later.
        let policy = RetryPolicy {
            startup_wait_secs: 60,
            ..policy
        };
        let started = tokio::time::Instant::now();
        let up_at = Duration::from_millis(10_600);
        let up = Probe {
            started,
            up_at,
            idle_at: Some(Duration::ZERO),
        };
        let mut sent_at = Vec::new();
        let result = policy
            .run(
                &deltas,
                || {
                    sent_at.push(started.elapsed());
                    let up = started.elapsed() >= up_at;
                    async move { if up { Ok("hello") } else { Err(refused()) } }
                },
                &up,
            )
            .await;
        assert_eq!(result.unwrap(), "hello");
        let last = *sent_at.last().unwrap();
        assert!(last >= up_at && last <= up_at + HEALTH_POLL, "{sent_at:?}");
        assert_eq!(
            sent_at.len(),
            2,
            "asked when it started and once it answered: {sent_at:?}"
        );

        // A 500 is not a server starting: its 3 attempts, then the error.
        let mut calls = 0;
        let result: Result<(), _> = policy
            .run(
                &deltas,
                || {
                    calls += 1;
                    async {
                        Err(ProviderError::Server {
                            status: 500,
                            message: "boom".into(),
                        })
                    }
                },
                &Probe::up(),
            )
            .await;
        assert!(result.is_err());
        assert_eq!(calls, 3);
    }

    /// After a collision (another request took the server's shared cache) the retry
    /// waits until no request runs on the server, polled, and goes within a poll of it
    /// (it used to retry into the same collision); the wait names the collision. A
    /// server that does not say waits the backoff's delay instead.
    #[tokio::test(start_paused = true)]
    async fn a_collision_is_retried_once_the_other_request_is_done() {
        let (deltas, mut announced) = tokio::sync::mpsc::unbounded_channel();
        let collided = || {
            ProviderError::from_stream_error(
                r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#,
            )
        };
        assert!(collided().is_collision());
        let started = tokio::time::Instant::now();
        let busy_until = Duration::from_millis(7_300);
        let server = Probe {
            started,
            up_at: Duration::ZERO,
            idle_at: Some(busy_until),
        };
        let mut sent_at = Vec::new();
        let result = policy(3)
            .run(
                &deltas,
                || {
                    sent_at.push(started.elapsed());
                    let first = sent_at.len() == 1;
                    async move { if first { Err(collided()) } else { Ok("answered") } }
                },
                &server,
            )
            .await;
        assert_eq!(result.unwrap(), "answered");
        assert_eq!(sent_at.len(), 2, "{sent_at:?}");
        assert!(
            sent_at[1] >= busy_until && sent_at[1] <= busy_until + HEALTH_POLL,
            "{sent_at:?}"
        );
        let mut said = Vec::new();
        while let Ok(StreamEvent::Retrying { reason, .. }) = announced.try_recv() {
            said.push(reason);
        }
        assert!(
            said[0].starts_with("a collision: another request on the server filled the cache its slots share")
                && said[0].ends_with("waiting for the other request to finish"),
            "{said:?}"
        );

        // Where the server does not say, the backoff's first delay (100 ms here).
        let started = tokio::time::Instant::now();
        let silent = Probe {
            started,
            up_at: Duration::ZERO,
            idle_at: None,
        };
        let mut sent_at = Vec::new();
        let result: Result<(), _> = policy(3)
            .run(
                &deltas,
                || {
                    sent_at.push(started.elapsed());
                    async { Err(collided()) }
                },
                &silent,
            )
            .await;
        assert!(result.is_err_and(|error| error.is_collision()));
        assert_eq!(
            sent_at,
            [Duration::ZERO, Duration::from_millis(100), Duration::from_millis(300)],
            "three attempts in all, the waits doubling"
        );
    }
}
