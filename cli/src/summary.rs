//! What a sync run did and how it ended: the [`Summary`] the loop fills in,
//! its [`Outcome`] (which gives `oplite sync` its exit code), and the text
//! `oplite sync` and `oplite demo` end with, whose first line says the
//! outcome so that a script (or a person) never reads "synced" for a run
//! that was not.

/// How a run ended, when it ended without a fatal error.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Outcome {
    /// `--once`: a checkpoint was applied with nothing left to upload.
    #[default]
    Synced,
    /// Live mode, stopped (Ctrl-C) while the database held a complete
    /// checkpoint and nothing was being downloaded.
    Stopped,
    /// Stopped (Ctrl-C) before a complete sync, or in the middle of a
    /// download in live mode.
    Interrupted,
    /// `--timeout` passed before a complete sync.
    TimedOut { seconds: u64 },
    /// Live mode: `--timeout` passed after at least one complete sync of
    /// this run. The file holds the last complete checkpoint; what was
    /// under way at the end is resumed by the next run.
    TimedOutSynced(TimedOutSynced),
    /// `--once`: this many connection attempts in a row failed.
    GaveUp { attempts: u32, last_error: String },
}

/// How a live run that had synced stood when its `--timeout` passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedOutSynced {
    /// The timeout, in whole seconds.
    pub seconds: u64,
    /// When the last checkpoint was applied, in seconds since the Unix
    /// epoch (shown as a UTC time of day).
    pub last_sync_unix: u64,
    /// How long before the end it was applied, in milliseconds.
    pub last_sync_before_end_ms: u64,
    /// A checkpoint being downloaded: (ops downloaded, ops it needs).
    pub download: Option<(u64, u64)>,
    /// Local writes not yet confirmed by an applied checkpoint.
    pub upload: Option<UploadInProgress>,
}

/// Local writes under way when a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UploadInProgress {
    /// This many `ps_crud` entries were not uploaded yet.
    Queued(u64),
    /// Everything was uploaded; the checkpoint carrying this write
    /// checkpoint (None: not asked for yet) was not applied yet.
    AwaitingWriteCheckpoint(Option<i64>),
}

/// `HH:MM:SS` of a Unix time, in UTC.
fn utc_time_of_day(unix: u64) -> String {
    let seconds = unix % 86_400;
    format!("{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60)
}

impl TimedOutSynced {
    /// What follows `into FILE` on the summary's first line: the last
    /// complete sync, and what was in progress.
    pub fn detail(&self) -> String {
        let mut under_way = Vec::new();
        if let Some((downloaded, total)) = self.download {
            under_way.push(format!(
                "a download was in progress ({} of {} ops of a newer checkpoint, not applied; the next run resumes it)",
                crate::progress::format_count(downloaded),
                crate::progress::format_count(total)
            ));
        }
        match &self.upload {
            Some(UploadInProgress::Queued(n)) => under_way.push(format!(
                "an upload was in progress ({} not uploaded yet)",
                crate::progress::count_of(*n, "entry", "entries")
            )),
            Some(UploadInProgress::AwaitingWriteCheckpoint(Some(wc))) => {
                under_way.push(format!("an upload was in progress (uploaded, waiting for write checkpoint {wc})"))
            }
            Some(UploadInProgress::AwaitingWriteCheckpoint(None)) => {
                under_way.push("an upload was in progress (uploaded, its write checkpoint not asked for yet)".into())
            }
            None => {}
        }
        let in_progress = if under_way.is_empty() { "no download or upload was in progress".to_owned() } else { under_way.join(" and ") };
        format!(
            "; last complete sync at {} UTC, {:.1} s before the end; {in_progress}",
            utc_time_of_day(self.last_sync_unix),
            self.last_sync_before_end_ms as f64 / 1000.0
        )
    }
}

impl Outcome {
    /// The exit code of `oplite sync` (docs/cli.md, "Exit codes").
    pub fn exit_code(&self) -> u8 {
        match self {
            Outcome::Synced | Outcome::Stopped | Outcome::TimedOutSynced(_) => 0,
            Outcome::TimedOut { .. } => 3,
            Outcome::GaveUp { .. } => 4,
            Outcome::Interrupted => 130,
        }
    }

    /// The first words of the summary.
    pub fn headline(&self) -> String {
        match self {
            Outcome::Synced => "synced".into(),
            Outcome::Stopped => "stopped (Ctrl-C), synced".into(),
            Outcome::Interrupted => "interrupted (Ctrl-C) before a complete sync".into(),
            Outcome::TimedOut { seconds } => format!("timed out after {seconds} s before a complete sync"),
            Outcome::TimedOutSynced(t) => format!("stopped at the timeout ({} s), synced", t.seconds),
            Outcome::GaveUp { attempts, last_error } => {
                format!("gave up after {attempts} failed connection attempts in a row (last: {last_error})")
            }
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Ops downloaded (from the buckets' counters).
    pub ops: u64,
    /// Synced rows visible to the app, per table.
    pub rows: Vec<(String, i64)>,
    /// Lines received.
    pub lines: u64,
    /// Bytes of lines received.
    pub bytes: u64,
    /// Wall-clock time of the run.
    pub seconds: f64,
    /// Seconds from the first line to the first applied checkpoint.
    pub first_sync_seconds: Option<f64>,
    /// Checkpoints applied (DidCompleteSync).
    pub checkpoints: u64,
    /// The last write checkpoint an applied checkpoint confirmed.
    pub confirmed_write_checkpoint: Option<i64>,
    /// Streams opened.
    pub connections: u64,
    /// Streams that ended with an error or were refused.
    pub failed_connections: u64,
    /// Tokens fetched after the first.
    pub credential_refreshes: u64,
    /// ps_crud entries uploaded.
    pub uploaded: u64,
    /// Checkpoint requests posted (`--checkpoint-mode requests`): one per
    /// connection, one per confirmed upload.
    pub checkpoint_requests: u64,
    /// Whether the lines were BSON.
    pub binary: bool,
    /// Buckets stored at the end.
    pub buckets: i64,
    /// How sync_local applied the last checkpoint of the run
    /// ([`crate::Database::last_apply`]); None when the run applied none.
    pub strategy: Option<String>,
    /// How the run ended.
    pub outcome: Outcome,
}

impl Summary {
    /// Total rows over all tables.
    pub fn total_rows(&self) -> i64 {
        self.rows.iter().map(|(_, n)| n).sum()
    }
}

/// Prints a summary the way `oplite sync` and `oplite demo` end.
pub fn print_summary(summary: &Summary, db_path: &std::path::Path) {
    print!("{}", summary_text(summary, db_path));
}

/// The summary [`print_summary`] prints.
pub fn summary_text(summary: &Summary, db_path: &std::path::Path) -> String {
    use crate::progress::{count_of, format_bytes, format_count};
    use std::fmt::Write;
    let mut out = String::new();
    let rate = if summary.seconds > 0.0 { summary.ops as f64 / summary.seconds } else { 0.0 };
    let _ = match &summary.outcome {
        Outcome::Synced | Outcome::Stopped => writeln!(out, "{} into {}", summary.outcome.headline(), db_path.display()),
        Outcome::TimedOutSynced(t) => {
            writeln!(out, "{} into {}{}", summary.outcome.headline(), db_path.display(), t.detail())
        }
        _ => writeln!(out, "{} ({} holds what was applied before)", summary.outcome.headline(), db_path.display()),
    };
    let _ = writeln!(
        out,
        "  ops         {} downloaded into {}",
        format_count(summary.ops),
        count_of(summary.buckets.max(0) as u64, "bucket", "buckets")
    );
    let tables: Vec<String> =
        summary.rows.iter().map(|(t, n)| format!("{t}: {}", format_count(*n as u64))).collect();
    let _ = writeln!(
        out,
        "  rows        {}{}",
        format_count(summary.total_rows().max(0) as u64),
        if tables.is_empty() { String::new() } else { format!(" ({})", tables.join(", ")) }
    );
    let kind = if summary.binary { "BSON" } else { "JSON" };
    let _ = writeln!(
        out,
        "  bytes       {} in {}",
        format_bytes(summary.bytes),
        count_of(summary.lines, &format!("{kind} line"), &format!("{kind} lines"))
    );
    match summary.first_sync_seconds {
        Some(first) => {
            let _ = writeln!(
                out,
                "  seconds     {:.2} ({:.2} from the first line to the applied checkpoint; {}/s)",
                summary.seconds,
                first,
                count_of(rate as u64, "op", "ops")
            );
        }
        None => {
            let _ = writeln!(out, "  seconds     {:.2}", summary.seconds);
        }
    }
    if let Some(strategy) = &summary.strategy {
        let _ = writeln!(out, "  strategy    {strategy}");
    }
    if summary.uploaded > 0 || summary.confirmed_write_checkpoint.is_some() {
        let _ = writeln!(
            out,
            "  uploads     {}{}",
            count_of(summary.uploaded, "entry", "entries"),
            summary.confirmed_write_checkpoint.map(|w| format!(", write checkpoint {w} confirmed")).unwrap_or_default()
        );
    }
    if summary.checkpoint_requests > 0 {
        let _ = writeln!(out, "  checkpoint  {} posted", count_of(summary.checkpoint_requests, "request", "requests"));
    }
    if summary.connections > 1 || summary.failed_connections > 0 || summary.credential_refreshes > 0 {
        let _ = writeln!(
            out,
            "  connections {} ({} failed), {}",
            summary.connections,
            summary.failed_connections,
            count_of(summary.credential_refreshes, "credential refresh", "credential refreshes")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_after_a_sync_says_when_it_synced_and_what_was_under_way() {
        let base = TimedOutSynced {
            seconds: 75,
            last_sync_unix: 86_400 * 3 + 3600 * 14 + 60 * 5 + 9,
            last_sync_before_end_ms: 12_345,
            download: None,
            upload: None,
        };
        let outcome = Outcome::TimedOutSynced(base.clone());
        assert_eq!(outcome.exit_code(), 0);
        let summary = Summary { outcome, ..Summary::default() };
        let first = summary_text(&summary, std::path::Path::new("a.db")).lines().next().unwrap().to_owned();
        assert_eq!(
            first,
            "stopped at the timeout (75 s), synced into a.db; last complete sync at 14:05:09 UTC, 12.3 s before the end; no download or upload was in progress"
        );
        let cases = [
            (Some((1500, 2000)), None, "a download was in progress (1,500 of 2,000 ops of a newer checkpoint, not applied; the next run resumes it)"),
            (None, Some(UploadInProgress::Queued(1)), "an upload was in progress (1 entry not uploaded yet)"),
            (None, Some(UploadInProgress::Queued(3)), "an upload was in progress (3 entries not uploaded yet)"),
            (None, Some(UploadInProgress::AwaitingWriteCheckpoint(Some(4))), "an upload was in progress (uploaded, waiting for write checkpoint 4)"),
            (None, Some(UploadInProgress::AwaitingWriteCheckpoint(None)), "an upload was in progress (uploaded, its write checkpoint not asked for yet)"),
            (Some((0, 1)), Some(UploadInProgress::Queued(2)), "a download was in progress (0 of 1 ops of a newer checkpoint, not applied; the next run resumes it) and an upload was in progress (2 entries not uploaded yet)"),
        ];
        for (download, upload, expected) in cases {
            let detail = TimedOutSynced { download, upload, ..base.clone() }.detail();
            assert_eq!(detail, format!("; last complete sync at 14:05:09 UTC, 12.3 s before the end; {expected}"));
        }
        assert_eq!(Outcome::TimedOut { seconds: 3 }.exit_code(), 3);
    }

    #[test]
    fn the_summary_uses_the_singular_for_one() {
        let one = Summary {
            ops: 1,
            buckets: 1,
            lines: 1,
            uploaded: 1,
            connections: 2,
            failed_connections: 1,
            credential_refreshes: 1,
            seconds: 1.0,
            first_sync_seconds: Some(0.5),
            confirmed_write_checkpoint: Some(3),
            checkpoint_requests: 1,
            ..Summary::default()
        };
        let text = summary_text(&one, std::path::Path::new("a.db"));
        for expected in ["1 downloaded into 1 bucket\n", "in 1 JSON line\n", "; 1 op/s)", "uploads     1 entry,", "1 credential refresh\n", "checkpoint  1 request posted\n"] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
        let many = Summary { ops: 2, buckets: 3, lines: 4, uploaded: 5, credential_refreshes: 2, binary: true, checkpoint_requests: 3, ..one };
        let text = summary_text(&many, std::path::Path::new("a.db"));
        for expected in ["2 downloaded into 3 buckets\n", "in 4 BSON lines\n", "; 2 ops/s)", "uploads     5 entries,", "2 credential refreshes\n", "checkpoint  3 requests posted\n"] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
    }
}
