//! Sync streams: which buckets a stream request gets, at which priority,
//! and why, as the PowerSync service decides it for its `streams` config.
//!
//! Without streams ([`ServiceOptions::streams`] empty) every request gets
//! every bucket at the bucket's own priority, as with sync rules. With
//! them, a request gets the buckets of the default streams (unless it
//! sends `include_defaults: false`) and of the streams it subscribes to in
//! `streams.subscriptions`. The checkpoint then names the streams it
//! serves (`streams: [{name, is_default, errors}]`), and each bucket says
//! why it is there (`subscriptions: [{"default": i}]` for the checkpoint's
//! stream i, `[{"sub": i}]` for the request's subscription i), at the
//! highest priority of its reasons: a subscription's `override_priority`,
//! or else its stream's priority. That is what core 0.5.4 reads into
//! `ps_stream_subscriptions` and what an SDK's stream status reports.

use oplite_test_data::lines::BucketEntry;
use serde_json::{json, Value};

/// A stream of the service's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncStreamDef {
    /// The name clients subscribe with.
    pub name: String,
    /// Synced to every client that includes defaults (`auto_subscribe`).
    pub is_default: bool,
    /// The priority of its buckets, unless a subscription overrides it.
    pub priority: i32,
    /// Its buckets: exact names, or prefixes ending in `*`.
    pub buckets: Vec<String>,
}

impl SyncStreamDef {
    fn holds(&self, bucket: &str) -> bool {
        self.buckets.iter().any(|b| match b.strip_suffix('*') {
            Some(prefix) => bucket.starts_with(prefix),
            None => b == bucket,
        })
    }
}

/// The streams of the `two-tables` dataset with `--streams`: `lists` (and
/// the uploads bucket, so that uploaded rows come back) is a default
/// stream of priority 1; `todos` is synced only to clients subscribing to
/// it, at priority 3 unless they override it.
pub fn two_tables_streams() -> Vec<SyncStreamDef> {
    vec![
        SyncStreamDef {
            name: "lists".into(),
            is_default: true,
            priority: 1,
            buckets: vec!["lists".into(), crate::UPLOADS_BUCKET.into()],
        },
        SyncStreamDef { name: "todos".into(), is_default: false, priority: 3, buckets: vec!["todos*".into()] },
    ]
}

/// What one stream request gets.
#[derive(Debug)]
pub(crate) struct Selection {
    /// None: no streams configured, everything as it is.
    streams: Option<Served>,
}

#[derive(Debug)]
struct Served {
    /// The checkpoint's `streams`, and the definitions they are of.
    listed: Vec<(SyncStreamDef, Value)>,
    /// The request's subscriptions: stream name and priority override.
    subscriptions: Vec<(String, Option<i32>)>,
}

impl Selection {
    /// The selection for a sync request (its `streams` object) under `defs`.
    pub(crate) fn for_request(defs: &[SyncStreamDef], request: &Value) -> Self {
        if defs.is_empty() {
            return Selection { streams: None };
        }
        let include_defaults = request["streams"]["include_defaults"].as_bool().unwrap_or(true);
        let subscriptions: Vec<(String, Option<i32>)> = request["streams"]["subscriptions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| (s["stream"].as_str().unwrap_or_default().to_owned(), s["override_priority"].as_i64().map(|p| p as i32)))
            .collect();
        let listed = defs
            .iter()
            .filter(|d| (d.is_default && include_defaults) || subscriptions.iter().any(|(name, _)| name == &d.name))
            .map(|d| {
                // A subscription to an unknown stream is reported on the
                // stream it names; this service has none to report.
                (d.clone(), json!({"name": d.name, "is_default": d.is_default && include_defaults, "errors": []}))
            })
            .collect();
        Selection { streams: Some(Served { listed, subscriptions }) }
    }

    /// Why `bucket` is served and at which priority; None when it is not.
    fn reasons(&self, bucket: &str) -> Option<(i32, Vec<Value>)> {
        let served = self.streams.as_ref()?;
        let mut priority = None::<i32>;
        let mut why = Vec::new();
        let mut raise = |p: i32| priority = Some(priority.map_or(p, |q| q.min(p)));
        for (i, (def, entry)) in served.listed.iter().enumerate() {
            if def.holds(bucket) && entry["is_default"] == true {
                why.push(json!({"default": i}));
                raise(def.priority);
            }
        }
        for (i, (name, override_priority)) in served.subscriptions.iter().enumerate() {
            if let Some((def, _)) = served.listed.iter().find(|(d, _)| &d.name == name && d.holds(bucket)) {
                why.push(json!({"sub": i}));
                raise(override_priority.unwrap_or(def.priority));
            }
        }
        priority.map(|p| (p, why))
    }

    /// Whether the request gets `bucket`, and at which priority.
    pub(crate) fn priority(&self, bucket: &str, own: i32) -> Option<i32> {
        match &self.streams {
            None => Some(own),
            Some(_) => self.reasons(bucket).map(|(p, _)| p),
        }
    }

    /// The checkpoint entries this request gets, at its priorities.
    pub(crate) fn entries(&self, entries: Vec<BucketEntry>) -> Vec<BucketEntry> {
        entries
            .into_iter()
            .filter_map(|mut e| {
                e.priority = self.priority(&e.bucket, e.priority)?;
                Some(e)
            })
            .collect()
    }

    /// Adds the streams and each bucket's reasons to a `checkpoint` or
    /// `checkpoint_diff` line built from [`Self::entries`].
    pub(crate) fn annotate(&self, line: &mut Value) {
        let Some(served) = &self.streams else { return };
        let (body, buckets) = match line.as_object_mut().and_then(|o| o.iter_mut().next()) {
            Some((kind, body)) if kind == "checkpoint" => (body, "buckets"),
            Some((kind, body)) if kind == "checkpoint_diff" => (body, "updated_buckets"),
            _ => return,
        };
        if buckets == "buckets" {
            body["streams"] = Value::Array(served.listed.iter().map(|(_, v)| v.clone()).collect());
        }
        for entry in body[buckets].as_array_mut().into_iter().flatten() {
            let name = entry["bucket"].as_str().unwrap_or_default().to_owned();
            if let Some((_, why)) = self.reasons(&name) {
                entry["subscriptions"] = Value::Array(why);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(bucket: &str) -> BucketEntry {
        BucketEntry { bucket: bucket.into(), checksum: 1, priority: 3, count: 1 }
    }

    fn all() -> Vec<BucketEntry> {
        ["lists", "todos0", "todos1", "uploads"].into_iter().map(entry).collect()
    }

    #[test]
    fn without_streams_everything_is_served_as_it_is() {
        let s = Selection::for_request(&[], &json!({"streams": {"include_defaults": false, "subscriptions": []}}));
        assert_eq!(s.entries(all()), all());
        let mut line = json!({"checkpoint": {"buckets": [{"bucket": "lists"}]}});
        s.annotate(&mut line);
        assert_eq!(line, json!({"checkpoint": {"buckets": [{"bucket": "lists"}]}}));
    }

    #[test]
    fn defaults_only_serve_the_default_stream_at_its_priority() {
        let s = Selection::for_request(&two_tables_streams(), &json!({"streams": {"include_defaults": true, "subscriptions": []}}));
        let got: Vec<(String, i32)> = s.entries(all()).into_iter().map(|e| (e.bucket, e.priority)).collect();
        assert_eq!(got, vec![("lists".into(), 1), ("uploads".into(), 1)]);
        let mut line = json!({"checkpoint": {"buckets": [{"bucket": "lists"}]}});
        s.annotate(&mut line);
        assert_eq!(line["checkpoint"]["streams"], json!([{"name": "lists", "is_default": true, "errors": []}]));
        assert_eq!(line["checkpoint"]["buckets"][0]["subscriptions"], json!([{"default": 0}]));
    }

    #[test]
    fn a_subscription_adds_its_stream_with_its_override() {
        let request = json!({"streams": {"include_defaults": false, "subscriptions": [
            {"stream": "todos", "parameters": null, "override_priority": 2}]}});
        let s = Selection::for_request(&two_tables_streams(), &request);
        let got: Vec<(String, i32)> = s.entries(all()).into_iter().map(|e| (e.bucket, e.priority)).collect();
        assert_eq!(got, vec![("todos0".into(), 2), ("todos1".into(), 2)]);
        let mut line = json!({"checkpoint_diff": {"updated_buckets": [{"bucket": "todos1"}]}});
        s.annotate(&mut line);
        assert_eq!(line["checkpoint_diff"]["updated_buckets"][0]["subscriptions"], json!([{"sub": 0}]));
        assert!(line["checkpoint_diff"].get("streams").is_none());
    }

    #[test]
    fn a_bucket_of_two_reasons_takes_the_higher_priority() {
        let request = json!({"streams": {"include_defaults": true, "subscriptions": [
            {"stream": "lists", "parameters": null, "override_priority": 0}]}});
        let s = Selection::for_request(&two_tables_streams(), &request);
        assert_eq!(s.priority("lists", 3), Some(0));
        let mut line = json!({"checkpoint": {"buckets": [{"bucket": "lists"}]}});
        s.annotate(&mut line);
        assert_eq!(line["checkpoint"]["buckets"][0]["subscriptions"], json!([{"default": 0}, {"sub": 0}]));
        assert_eq!(s.priority("todos0", 3), None);
    }
}
