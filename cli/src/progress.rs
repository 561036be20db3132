//! The progress bar, fed by `UpdateSyncStatus`.
//!
//! The engine reports download progress per priority
//! (`downloading.buckets.prio_N.{since_last, target_count}`); the bar shows
//! their sums. Bytes come from the host, which sees the lines. On a
//! terminal this is an indicatif bar on stderr; when stderr is not a
//! terminal (a file, a CI log) it is a plain line at every change of phase
//! (connecting, connected, downloading, applying, synced, reconnecting) and
//! every [`PLAIN_EVERY`] while lines arrive, instead.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

/// What a status says about the download.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatusSummary {
    /// The stream is connected.
    pub connected: bool,
    /// The engine is waiting for a stream to open.
    pub connecting: bool,
    /// A checkpoint is being downloaded.
    pub downloading: bool,
    /// Ops downloaded for it so far.
    pub downloaded: u64,
    /// Ops it needs.
    pub total: u64,
    /// Priorities fully synced at least once.
    pub has_synced: bool,
}

impl StatusSummary {
    /// Reads an `UpdateSyncStatus` status object.
    pub fn from_status(status: &Value) -> Self {
        let mut summary = StatusSummary {
            connected: status["connected"].as_bool().unwrap_or(false),
            connecting: status["connecting"].as_bool().unwrap_or(false),
            has_synced: status["priority_status"]
                .as_array()
                .is_some_and(|p| p.iter().any(|s| s["has_synced"].as_bool() == Some(true))),
            ..Default::default()
        };
        if let Some(buckets) = status["downloading"]["buckets"].as_object() {
            summary.downloading = true;
            for progress in buckets.values() {
                summary.downloaded += progress["since_last"].as_u64().unwrap_or(0);
                summary.total += progress["target_count"].as_u64().unwrap_or(0);
            }
        }
        summary
    }
}

/// Human-readable bytes.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A number with thousands separators.
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` and the noun, singular for one: `1 bucket`, `1,000 buckets`.
pub fn count_of(n: u64, singular: &str, plural: &str) -> String {
    format!("{} {}", format_count(n), if n == 1 { singular } else { plural })
}

/// Time between plain progress lines when stderr is not a terminal.
pub const PLAIN_EVERY: Duration = Duration::from_secs(3);

/// What a plain progress line shows: the phase, ops (of how many, and
/// the percentage when the total is known), the rate since the start and
/// the bytes received.
pub fn plain_line(phase: &str, downloaded: u64, total: u64, bytes: u64, elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    let rate = if seconds > 0.0 { (downloaded as f64 / seconds) as u64 } else { 0 };
    let (of, percent) = if total > 0 {
        (format!(" / {}", format_count(total)), format!(" ({}%)", downloaded.min(total) * 100 / total))
    } else {
        (String::new(), String::new())
    };
    format!(
        "oplite: {phase}: {}{of} ops{percent}, {}/s, {} received, {:.0} s",
        format_count(downloaded),
        count_of(rate, "op", "ops"),
        format_bytes(bytes),
        seconds
    )
}

/// When the next plain line is due.
#[derive(Debug)]
struct PlainTimer {
    started: Instant,
    next: Instant,
}

impl PlainTimer {
    fn new(now: Instant) -> Self {
        PlainTimer { started: now, next: now + PLAIN_EVERY }
    }

    /// Whether a line is due at `now`; if so, the next one is due a period
    /// later.
    fn due(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.next = now + PLAIN_EVERY;
        true
    }
}

/// The progress display of a sync run.
pub struct Progress {
    bar: ProgressBar,
    last: StatusSummary,
    /// Plain lines instead of the bar (stderr is not a terminal).
    plain: Option<PlainTimer>,
    phase: &'static str,
    bytes: u64,
}

impl Progress {
    /// A bar on stderr when `visible` and stderr is a terminal; plain lines
    /// when `visible` and it is not; nothing otherwise.
    pub fn new(visible: bool) -> Self {
        Self::with_terminal(visible, std::io::stderr().is_terminal())
    }

    fn with_terminal(visible: bool, terminal: bool) -> Self {
        let target = if visible && terminal { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(0), target);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner:.green} {prefix:<11} [{bar:32.cyan/blue}] {human_pos}/{human_len} ops  {msg}  {elapsed}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        bar.set_prefix("connecting");
        if visible && terminal {
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        let plain = (visible && !terminal).then(|| PlainTimer::new(Instant::now()));
        Progress { bar, last: StatusSummary::default(), plain, phase: "connecting", bytes: 0 }
    }

    /// A new phase; without a terminal, a change of phase is printed at
    /// once (the periodic lines only come while lines arrive).
    fn set_phase(&mut self, phase: &'static str) {
        let changed = self.phase != phase;
        self.phase = phase;
        self.bar.set_prefix(phase);
        if changed && phase != "disconnected" {
            self.plain_line_now();
        }
    }

    /// The stream closed and the loop waits before reconnecting.
    pub fn reconnecting(&mut self) {
        self.set_phase("reconnecting");
    }

    /// Shows a new status.
    pub fn status(&mut self, status: &Value) {
        let summary = StatusSummary::from_status(status);
        let phase = if summary.downloading {
            // Everything is here: the engine is validating and applying.
            let complete = summary.total > 0 && summary.downloaded >= summary.total;
            self.bar.set_length(summary.total.max(summary.downloaded));
            self.bar.set_position(summary.downloaded);
            if complete { "applying" } else { "downloading" }
        } else if summary.connected {
            if self.last.downloading {
                // The checkpoint was applied: the bar is complete.
                let len = self.bar.length().unwrap_or(0);
                self.bar.set_position(len);
            }
            if summary.has_synced { "synced" } else { "connected" }
        } else if summary.connecting {
            "connecting"
        } else {
            // The iteration ended (a stop, or a closed stream the loop
            // reports as "reconnecting" itself).
            "disconnected"
        };
        self.last = summary;
        if self.phase != phase {
            self.set_phase(phase);
        } else {
            self.maybe_plain_line();
        }
    }

    /// The download in progress, as (ops downloaded, ops it needs), if the
    /// last status had one with ops in it. A checkpoint that needs no ops
    /// is not one: it is what every reconnect gets when nothing changed
    /// (after a token refresh, say), the engine reports it as downloading
    /// until its `checkpoint_complete` arrives a line later, and a run that
    /// ends between the two lines was not downloading anything.
    pub fn download(&self) -> Option<(u64, u64)> {
        let ops = self.last.total.max(self.last.downloaded);
        (self.last.downloading && ops > 0).then_some((self.last.downloaded, self.last.total))
    }

    /// Shows the bytes received so far.
    pub fn bytes(&mut self, bytes: u64) {
        self.bytes = bytes;
        self.bar.set_message(format_bytes(bytes));
        self.maybe_plain_line();
    }

    fn maybe_plain_line(&mut self) {
        if self.plain.as_mut().is_some_and(|timer| timer.due(Instant::now())) {
            self.plain_line_now();
        }
    }

    fn plain_line_now(&self) {
        let Some(timer) = &self.plain else { return };
        let (downloaded, total) = (self.bar.position(), self.bar.length().unwrap_or(0));
        eprintln!("{}", plain_line(self.phase, downloaded, total, self.bytes, timer.started.elapsed()));
    }

    /// Shows a one-off event (reconnect, upload) above the bar, or on
    /// stderr when no bar is drawn.
    pub fn println(&self, line: impl AsRef<str>) {
        if self.bar.is_hidden() {
            eprintln!("{}", line.as_ref());
        } else {
            self.bar.println(line.as_ref());
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sums_progress_over_priorities() {
        let status = json!({"connected": true, "connecting": false, "priority_status": [],
            "downloading": {"buckets": {"prio_3": {"priority": 3, "at_last": 0, "since_last": 5, "target_count": 10},
                                        "prio_0": {"priority": 0, "at_last": 0, "since_last": 2, "target_count": 2}}}});
        let s = StatusSummary::from_status(&status);
        assert_eq!((s.downloading, s.downloaded, s.total, s.has_synced), (true, 7, 12, false));
        let synced = json!({"connected": true, "priority_status": [{"priority": 2147483647, "last_synced_at": 1, "has_synced": true}], "downloading": null});
        let s = StatusSummary::from_status(&synced);
        assert_eq!((s.downloading, s.has_synced), (false, true));
    }

    #[test]
    fn a_checkpoint_that_needs_no_ops_is_no_download() {
        // What the engine reports after a reconnect's `checkpoint` line when
        // nothing changed since the applied one, before its
        // `checkpoint_complete`.
        let reconnect = json!({"connected": true, "connecting": false, "priority_status": [{"priority": 2147483647, "has_synced": true}],
            "downloading": {"buckets": {"prio_3": {"priority": 3, "at_last": 0, "since_last": 0, "target_count": 0}}}});
        let mut p = Progress::with_terminal(false, false);
        p.status(&reconnect);
        assert_eq!(p.download(), None);
        let newer = json!({"connected": true, "priority_status": [],
            "downloading": {"buckets": {"prio_3": {"priority": 3, "at_last": 500, "since_last": 0, "target_count": 1}}}});
        p.status(&newer);
        assert_eq!(p.download(), Some((0, 1)));
        let applied = json!({"connected": true, "priority_status": [{"has_synced": true}], "downloading": null});
        p.status(&applied);
        assert_eq!(p.download(), None);
    }

    #[test]
    fn phases_follow_the_status_and_the_loop() {
        let mut p = Progress::with_terminal(true, false);
        let mut phases = Vec::new();
        let statuses = [
            json!({"connected": false, "connecting": true, "priority_status": [], "downloading": null}),
            json!({"connected": true, "connecting": false, "priority_status": [], "downloading": null}),
            json!({"connected": true, "priority_status": [], "downloading": {"buckets": {"prio_3": {"since_last": 1, "target_count": 2}}}}),
            json!({"connected": true, "priority_status": [], "downloading": {"buckets": {"prio_3": {"since_last": 2, "target_count": 2}}}}),
            json!({"connected": true, "priority_status": [{"has_synced": true}], "downloading": null}),
            json!({"connected": false, "connecting": false, "priority_status": [{"has_synced": true}], "downloading": null}),
        ];
        for status in &statuses {
            p.status(status);
            phases.push(p.phase);
        }
        p.reconnecting();
        phases.push(p.phase);
        assert_eq!(phases, ["connecting", "connected", "downloading", "applying", "synced", "disconnected", "reconnecting"]);
    }

    #[test]
    fn counts_take_the_singular_for_one() {
        assert_eq!(count_of(1, "bucket", "buckets"), "1 bucket");
        assert_eq!(count_of(0, "bucket", "buckets"), "0 buckets");
        assert_eq!(count_of(1_000, "entry", "entries"), "1,000 entries");
    }

    #[test]
    fn plain_lines_show_ops_percent_rate_and_bytes() {
        assert_eq!(
            plain_line("downloading", 250_000, 1_000_000, 3 << 20, Duration::from_secs(2)),
            "oplite: downloading: 250,000 / 1,000,000 ops (25%), 125,000 ops/s, 3.0 MiB received, 2 s"
        );
        // No total yet, no time yet.
        assert_eq!(plain_line("connecting", 0, 0, 0, Duration::ZERO), "oplite: connecting: 0 ops, 0 ops/s, 0 B received, 0 s");
        assert_eq!(plain_line("applying", 10, 10, 100, Duration::from_secs(10)), "oplite: applying: 10 / 10 ops (100%), 1 op/s, 100 B received, 10 s");
    }

    #[test]
    fn plain_lines_come_every_period_not_on_every_update() {
        let start = Instant::now();
        let mut timer = PlainTimer::new(start);
        assert!(!timer.due(start));
        assert!(!timer.due(start + PLAIN_EVERY - Duration::from_millis(1)));
        assert!(timer.due(start + PLAIN_EVERY));
        assert!(!timer.due(start + PLAIN_EVERY + Duration::from_millis(10)));
        assert!(timer.due(start + 2 * PLAIN_EVERY + Duration::from_millis(10)));
    }

    #[test]
    fn plain_lines_only_when_stderr_is_not_a_terminal() {
        assert!(Progress::with_terminal(true, false).plain.is_some());
        assert!(Progress::with_terminal(true, true).plain.is_none());
        assert!(Progress::with_terminal(false, false).plain.is_none());
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(format_count(1_000_000), "1,000,000");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
    }
}
