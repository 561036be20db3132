//! Exponential backoff between reconnects and between failed uploads: the
//! delay doubles after each failure up to a maximum, and progress resets
//! it, so a service that is down is not hammered and one that comes back
//! is reached again quickly.

use std::time::Duration;

/// Exponential backoff between reconnects.
#[derive(Clone, Debug, PartialEq)]
pub struct Backoff {
    /// The first delay.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
    attempt: u32,
}

impl Backoff {
    /// Delays from `initial`, doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Backoff { initial, max, attempt: 0 }
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> Duration {
        let factor = 1u32 << self.attempt.min(16);
        self.attempt = self.attempt.saturating_add(1);
        self.initial.saturating_mul(factor).min(self.max)
    }

    /// Back to the first delay (after progress).
    pub fn reset(&mut self) {
        self.attempt = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_maximum_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(700));
        let delays: Vec<u128> = (0..5).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 400, 700, 700]);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(100));
        for _ in 0..100 {
            b.next_delay();
        }
        assert_eq!(b.next_delay(), Duration::from_millis(700));
    }
}
