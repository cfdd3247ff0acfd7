//! When a plugin's HTTP request is retried because the provider said "too
//! many requests": every provider plugin shares this policy, so it lives in
//! the host's `http` import rather than in seven plugins.
//!
//! A response asks for a wait when it is a 429, a 403 that is GitHub's
//! rate limit (its primary limit says `x-ratelimit-remaining: 0`, its
//! secondary limit sends `retry-after`), or a 400 that is Linear's (a
//! GraphQL API that answers a rate limit with 400 and says which budget ran
//! out in `x-ratelimit-{requests,complexity,endpoint-requests}-remaining: 0`).
//! The wait is `Retry-After` (seconds or an HTTP date), else
//! `X-RateLimit-Reset` (Unix seconds), else the reset of the budgets that
//! ran out (Linear's `x-ratelimit-*-reset`, Unix milliseconds), else one
//! second. Only headers are read: a rate limit reported in a 200's body is
//! the plugin's to report. The host sleeps and sends the request again only if the wait fits
//! in what is left of the plugin call's wall-clock budget, at most
//! [`MAX_RETRIES`] times; otherwise the plugin gets the response as it came,
//! with [`NOT_RETRIED`] saying how long the provider asked to wait, so its
//! error can say so. This module owns the decision, not the sending.

use std::time::{Duration, SystemTime};

/// Retries of one request, so a provider that keeps answering 429 with a
/// short wait cannot hold a call for its whole budget in a loop.
pub const MAX_RETRIES: u32 = 3;

/// Response header the host adds when it did not retry a rate-limited
/// response: the seconds the provider asked to wait.
pub const NOT_RETRIED: &str = "toolhost-rate-limit-wait-s";

/// Linear's budgets, each with `x-ratelimit-NAME-remaining` and
/// `x-ratelimit-NAME-reset` (Unix milliseconds).
const MS_BUDGETS: [&str; 3] = ["requests", "complexity", "endpoint-requests"];

/// The wait a response asks for before the request is sent again, or
/// `None` if it is not a rate limit. `now` is the wall clock, for resets
/// given as a time.
pub fn wait(status: u16, header: impl Fn(&str) -> Option<String>, now: SystemTime) -> Option<Duration> {
    let spent: Vec<&str> = MS_BUDGETS
        .into_iter()
        .filter(|b| {
            header(&format!("x-ratelimit-{b}-remaining"))
                .as_deref()
                .map(str::trim)
                == Some("0")
        })
        .collect();
    let limited = match status {
        429 => true,
        403 => header("retry-after").is_some() || header("x-ratelimit-remaining").as_deref() == Some("0"),
        400 => !spent.is_empty(),
        _ => false,
    };
    if !limited {
        return None;
    }
    let until = |at: SystemTime| at.duration_since(now).unwrap_or(Duration::ZERO);
    // A reset past what the clock can hold is a wait too long for any call.
    let since_epoch = |d: Duration| SystemTime::UNIX_EPOCH.checked_add(d).map_or(Duration::MAX, until);
    // The last of the spent budgets to refill is when a retry can pass.
    let ms_reset = || {
        spent
            .iter()
            .filter_map(|b| {
                header(&format!("x-ratelimit-{b}-reset"))?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .map(|at| since_epoch(Duration::from_millis(at)))
    };
    let retry_after = header("retry-after").and_then(|v| {
        let v = v.trim().to_owned();
        v.parse::<u64>()
            .ok()
            .map(Duration::from_secs)
            .or_else(|| httpdate::parse_http_date(&v).ok().map(until))
    });
    let reset = || {
        header("x-ratelimit-reset")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|at| since_epoch(Duration::from_secs(at)))
    };
    Some(
        retry_after
            .or_else(reset)
            .or_else(ms_reset)
            .unwrap_or(Duration::from_secs(1)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers<'a>(list: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| list.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_wait_comes_from_retry_after_then_the_reset_time() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        assert_eq!(
            wait(429, headers(&[("retry-after", "2")]), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            wait(
                429,
                headers(&[("retry-after", "Thu, 01 Jan 1970 00:16:45 GMT")]),
                now
            ),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            wait(
                403,
                headers(&[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1003")]),
                now
            ),
            Some(Duration::from_secs(3))
        );
        assert_eq!(wait(429, headers(&[]), now), Some(Duration::from_secs(1)));
        // A reset the clock cannot hold is no panic, but a wait too long.
        assert_eq!(
            wait(
                429,
                headers(&[("x-ratelimit-reset", "18446744073709551615")]),
                now
            ),
            Some(Duration::MAX)
        );
        // A reset in the past means "now".
        assert_eq!(
            wait(429, headers(&[("x-ratelimit-reset", "10")]), now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn a_400_with_a_spent_linear_budget_waits_for_its_reset_in_milliseconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        assert_eq!(
            wait(
                400,
                headers(&[
                    ("x-ratelimit-requests-remaining", "0"),
                    ("x-ratelimit-requests-reset", "1002500"),
                    ("x-ratelimit-complexity-remaining", "2999940"),
                    ("x-ratelimit-complexity-reset", "1009000"),
                ]),
                now
            ),
            Some(Duration::from_millis(2_500))
        );
        // Both spent: the later reset.
        assert_eq!(
            wait(
                400,
                headers(&[
                    ("x-ratelimit-requests-remaining", "0"),
                    ("x-ratelimit-requests-reset", "1001000"),
                    ("x-ratelimit-complexity-remaining", "0"),
                    ("x-ratelimit-complexity-reset", "1004000"),
                ]),
                now
            ),
            Some(Duration::from_secs(4))
        );
        assert_eq!(
            wait(
                400,
                headers(&[("x-ratelimit-endpoint-requests-remaining", "0")]),
                now
            ),
            Some(Duration::from_secs(1))
        );
    }

    #[test]
    fn only_rate_limits_ask_for_a_wait() {
        let now = SystemTime::now();
        assert_eq!(wait(403, headers(&[]), now), None);
        assert_eq!(wait(403, headers(&[("x-ratelimit-remaining", "12")]), now), None);
        assert_eq!(wait(200, headers(&[("retry-after", "1")]), now), None);
        assert_eq!(wait(503, headers(&[("retry-after", "1")]), now), None);
        // A 400 whose budgets are left is the provider refusing the input.
        assert_eq!(wait(400, headers(&[]), now), None);
        assert_eq!(
            wait(
                400,
                headers(&[
                    ("x-ratelimit-requests-remaining", "12"),
                    ("x-ratelimit-requests-reset", "1"),
                ]),
                now
            ),
            None
        );
        // A 200 that spent the last request is an answer, not a limit.
        assert_eq!(
            wait(200, headers(&[("x-ratelimit-requests-remaining", "0")]), now),
            None
        );
    }
}
