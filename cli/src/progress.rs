//! The progress bar, fed by `UpdateSyncStatus`.
//!
//! The engine reports download progress per priority
//! (`downloading.buckets.prio_N.{since_last, target_count}`); the bar shows
//! their sums. Bytes come from the host, which sees the lines. On a
//! terminal this is an indicatif bar on stderr; elsewhere nothing is drawn.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

/// What a status says about the download.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatusSummary {
    /// The stream is connected.
    pub connected: bool,
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

/// The progress display of a sync run.
pub struct Progress {
    bar: ProgressBar,
    last: StatusSummary,
}

impl Progress {
    /// A bar on stderr when `visible` (and stderr is a terminal).
    pub fn new(visible: bool) -> Self {
        let target = if visible { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(0), target);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner:.green} {prefix:<11} [{bar:32.cyan/blue}] {human_pos}/{human_len} ops  {msg}  {elapsed}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        bar.set_prefix("connecting");
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { bar, last: StatusSummary::default() }
    }

    /// Shows a new status.
    pub fn status(&mut self, status: &Value) {
        let summary = StatusSummary::from_status(status);
        if summary.downloading {
            // Everything is here: the engine is validating and applying.
            let complete = summary.total > 0 && summary.downloaded >= summary.total;
            self.bar.set_prefix(if complete { "applying" } else { "downloading" });
            self.bar.set_length(summary.total.max(summary.downloaded));
            self.bar.set_position(summary.downloaded);
        } else if summary.connected {
            self.bar.set_prefix(if summary.has_synced { "synced" } else { "connected" });
            if self.last.downloading {
                // The checkpoint was applied: the bar is complete.
                let len = self.bar.length().unwrap_or(0);
                self.bar.set_position(len);
            }
        } else {
            self.bar.set_prefix("connecting");
        }
        self.last = summary;
    }

    /// Shows the bytes received so far.
    pub fn bytes(&self, bytes: u64) {
        self.bar.set_message(format_bytes(bytes));
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
    fn formats_numbers() {
        assert_eq!(format_count(1_000_000), "1,000,000");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
    }
}
