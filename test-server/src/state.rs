//! The service's state: its buckets (generated or explicit), the ops that
//! uploads add to them, tokens and write checkpoints.

use super::*;

pub(crate) struct Bucket {
    pub(crate) name: String,
    pub(crate) priority: i32,
    /// The generated bucket this one starts with.
    pub(crate) generated: Option<u64>,
    /// Checksum and count of the generated part.
    pub(crate) generated_checksum: u32,
    pub(crate) generated_count: u64,
    /// Ops after the generated part (or all ops of an explicit bucket),
    /// since the last CLEAR.
    pub(crate) ops: Vec<ServerOp>,
}

impl Bucket {
    pub(crate) fn entry(&self) -> BucketEntry {
        let checksum = self.ops.iter().fold(self.generated_checksum, |s, op| s.wrapping_add(op.checksum));
        BucketEntry {
            bucket: self.name.clone(),
            checksum,
            priority: self.priority,
            count: self.generated_count + self.ops.len() as u64,
        }
    }

    pub(crate) fn last_op_id(&self, spec: Option<&StreamSpec>) -> i64 {
        match self.ops.last() {
            Some(op) => op.op_id,
            None => match (self.generated, spec) {
                (Some(b), Some(spec)) if spec.count(b) > 0 => {
                    spec.op_ids(b, 0).last().map(|n| n as i64).unwrap_or(0)
                }
                _ => 0,
            },
        }
    }
}

pub(crate) struct State {
    pub(crate) spec: Option<StreamSpec>,
    pub(crate) buckets: Vec<Bucket>,
    pub(crate) next_op_id: i64,
    /// Rows written by explicit or uploaded ops: bucket index and current
    /// data (None after a REMOVE).
    pub(crate) rows: HashMap<(String, String), (usize, Option<String>)>,
    /// The write checkpoint record of each client id (the service keys it
    /// by user and client id; this service has one user).
    pub(crate) write_checkpoints: HashMap<String, i64>,
    /// The signing key, the rules tokens are checked by, static and
    /// expired tokens.
    pub(crate) keys: auth::Keys,
    /// Bumped on every change streams must see.
    pub(crate) version: u64,
    pub(crate) fault_plans: VecDeque<Fault>,
    /// How many of the next live checkpoints, one per open stream that
    /// sends one, are preceded by a checkpoint line that is not valid
    /// ([`TestService::bad_next_checkpoint`](crate::TestService::bad_next_checkpoint)).
    pub(crate) bad_checkpoints: usize,
    /// The next live checkpoint an open stream sends stops after this many
    /// of its lines and the stream holds
    /// ([`TestService::hold_next_checkpoint_after`](crate::TestService::hold_next_checkpoint_after)).
    pub(crate) hold_next_checkpoint: Option<usize>,
    pub(crate) stats: Stats,
    pub(crate) ops_per_line: usize,
    /// Upload request bodies as received (`GET /dev/log`).
    pub(crate) upload_log: Vec<Value>,
    /// The bucket positions of each sync stream request (`GET /dev/log`).
    pub(crate) stream_log: Vec<Value>,
    /// The configured sync streams ([`crate::sync_streams`]).
    pub(crate) streams: Vec<crate::sync_streams::SyncStreamDef>,
}

impl State {
    pub(crate) fn new(options: &ServiceOptions) -> Self {
        let mut state = State {
            spec: None,
            buckets: Vec::new(),
            next_op_id: 1,
            rows: HashMap::new(),
            write_checkpoints: HashMap::new(),
            keys: auth::Keys::new(options),
            version: 0,
            fault_plans: VecDeque::new(),
            bad_checkpoints: 0,
            hold_next_checkpoint: None,
            stats: Stats::default(),
            ops_per_line: options.ops_per_line.max(1),
            upload_log: Vec::new(),
            stream_log: Vec::new(),
            streams: options.streams.clone(),
        };
        match &options.dataset {
            Dataset::Generated(spec) => {
                for entry in spec.entries() {
                    let b = spec.bucket_index(&entry.bucket).expect("generated bucket name");
                    state.buckets.push(Bucket {
                        name: entry.bucket.clone(),
                        priority: entry.priority,
                        generated: Some(b),
                        generated_checksum: entry.checksum,
                        generated_count: entry.count,
                        ops: Vec::new(),
                    });
                }
                state.next_op_id = spec.ops as i64 + 1;
                state.ops_per_line = spec.ops_per_line.max(1);
                state.spec = Some(spec.clone());
            }
            Dataset::Buckets(buckets) => {
                for (i, bucket) in buckets.iter().enumerate() {
                    for op in &bucket.ops {
                        state.next_op_id = state.next_op_id.max(op.op_id + 1);
                        if let (Some(t), Some(id)) = (&op.object_type, &op.object_id) {
                            let data = if op.op == "PUT" { op.data.clone() } else { None };
                            state.rows.insert((t.clone(), id.clone()), (i, data));
                        }
                    }
                    state.buckets.push(Bucket {
                        name: bucket.name.clone(),
                        priority: bucket.priority,
                        generated: None,
                        generated_checksum: 0,
                        generated_count: 0,
                        ops: bucket.ops.clone(),
                    });
                }
            }
        }
        state
    }

    pub(crate) fn last_op_id(&self) -> i64 {
        self.next_op_id - 1
    }

    pub(crate) fn entries(&self) -> Vec<BucketEntry> {
        self.buckets.iter().map(Bucket::entry).collect()
    }

    /// The token's time left on a stream: Ok(seconds, None for never), or
    /// why it is refused; a token past its `exp` is expired here, without
    /// the clock tolerance of a request.
    pub(crate) fn token_left(&self, token: &str) -> Result<Option<i64>, auth::AuthError> {
        match self.keys.verify(token)? {
            None => Ok(None),
            Some(exp) if exp > auth::now_secs() => Ok(Some(exp - auth::now_secs())),
            Some(_) => Err(auth::AuthError { code: "PSYNC_S2103", description: "JWT has expired".into() }),
        }
    }

    /// How long until `token` expires, if it does.
    pub(crate) fn token_expires_after(&self, token: &str) -> Option<Duration> {
        let exp = self.keys.verify(token).ok()??;
        let at = std::time::UNIX_EPOCH + Duration::from_secs(exp.max(0) as u64);
        Some(at.duration_since(std::time::SystemTime::now()).unwrap_or_default())
    }

    /// `GET /write-checkpoint2.json`: a generated write checkpoint, the
    /// client's record plus one, as the service's managed write checkpoints
    /// (`createManagedWriteCheckpointUpdate` in the MongoDB storage's
    /// `MongoWriteCheckpointAPI.ts`: `client_id + 1`).
    pub(crate) fn create_write_checkpoint(&mut self, client_id: &str) -> i64 {
        let record = self.write_checkpoints.entry(client_id.to_owned()).or_insert(0);
        *record += 1;
        *record
    }

    /// `POST /sync/checkpoint-request`: the record becomes the larger of it
    /// and `id` (a stale or repeated id changes nothing), and is returned
    /// with whether it moved. The service's rule: a supplied id applies only
    /// when there is no record or it is greater than the record, and the
    /// answer is the record after the request.
    pub(crate) fn request_checkpoint(&mut self, client_id: &str, id: i64) -> (i64, bool) {
        match self.write_checkpoints.get(client_id) {
            Some(&record) if record >= id => (record, false),
            _ => {
                self.write_checkpoints.insert(client_id.to_owned(), id);
                (id, true)
            }
        }
    }

    /// Makes `token` invalid from now on.
    pub(crate) fn expire_token(&mut self, token: &str) {
        self.keys.revoked.insert(token.to_owned());
    }

    pub(crate) fn bucket_index(&mut self, name: &str) -> usize {
        if let Some(i) = self.buckets.iter().position(|b| b.name == name) {
            return i;
        }
        self.buckets.push(Bucket {
            name: name.to_owned(),
            priority: 3,
            generated: None,
            generated_checksum: 0,
            generated_count: 0,
            ops: Vec::new(),
        });
        self.buckets.len() - 1
    }

    /// Where a row lives and its current data.
    pub(crate) fn locate(&self, row_type: &str, id: &str) -> Option<(usize, Option<String>)> {
        if let Some((b, data)) = self.rows.get(&(row_type.to_owned(), id.to_owned())) {
            return Some((*b, data.clone()));
        }
        let spec = self.spec.as_ref()?;
        let (b, newest) = spec.route(row_type, id)?;
        let index = self.buckets.iter().position(|bucket| bucket.generated == Some(b))?;
        Some((index, Some(spec.row_data(newest))))
    }

    pub(crate) fn push_op(&mut self, bucket: usize, op: &'static str, row_type: &str, id: &str, data: Option<String>) {
        let op_id = self.next_op_id;
        self.next_op_id += 1;
        let checksum = (op_id as u64).wrapping_mul(0x9E37_79B9) as u32;
        self.buckets[bucket].ops.push(ServerOp {
            op_id,
            op,
            object_type: Some(row_type.to_owned()),
            object_id: Some(id.to_owned()),
            subkey: None,
            checksum,
            data: data.clone(),
        });
        self.rows.insert((row_type.to_owned(), id.to_owned()), (bucket, data));
    }

    /// Applies one ps_crud entry (`{"op", "type", "id", "data"?}`).
    pub(crate) fn apply_crud(&mut self, entry: &Value) -> Result<(), String> {
        let op = entry["op"].as_str().ok_or("crud entry without op")?;
        let row_type = entry["type"].as_str().ok_or("crud entry without type")?;
        let id = entry["id"].as_str().ok_or("crud entry without id")?;
        let located = self.locate(row_type, id);
        let fields = |v: &Value| v.as_object().cloned().unwrap_or_default();
        match op {
            "PUT" => {
                let bucket = match located {
                    Some((b, _)) => b,
                    None => self.bucket_index(UPLOADS_BUCKET),
                };
                let data = Value::Object(fields(&entry["data"])).to_string();
                self.push_op(bucket, "PUT", row_type, id, Some(data));
            }
            "PATCH" => {
                let (bucket, current) = match located {
                    Some((b, current)) => (b, current),
                    None => (self.bucket_index(UPLOADS_BUCKET), None),
                };
                let mut row = current
                    .and_then(|c| serde_json::from_str::<Value>(&c).ok())
                    .map(|v| fields(&v))
                    .unwrap_or_default();
                for (k, v) in fields(&entry["data"]) {
                    row.insert(k, v);
                }
                self.push_op(bucket, "PUT", row_type, id, Some(Value::Object(row).to_string()));
            }
            "DELETE" => {
                if let Some((bucket, Some(_))) = located {
                    self.push_op(bucket, "REMOVE", row_type, id, None);
                }
            }
            other => return Err(format!("unknown crud op {other:?}")),
        }
        Ok(())
    }
}

/// Checks the shape of a ps_crud entry before anything is applied.
pub(crate) fn check_crud(entry: &Value) -> Result<(), String> {
    match entry["op"].as_str() {
        Some("PUT" | "PATCH" | "DELETE") => {}
        Some(other) => return Err(format!("unknown crud op {other:?}")),
        None => return Err("crud entry without op".into()),
    }
    if entry["type"].as_str().is_none() {
        return Err("crud entry without type".into());
    }
    if entry["id"].as_str().is_none() {
        return Err("crud entry without id".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploads_route_to_the_bucket_holding_the_row() {
        let options = ServiceOptions::new(Dataset::Generated(StreamSpec::benchmark(100)));
        let mut state = State::new(&options);
        state.apply_crud(&json!({"op": "PATCH", "type": "thisisatable", "id": "thisismyrowid13", "data": {"x": 1}})).unwrap();
        assert_eq!(state.buckets[3].ops.len(), 1);
        assert_eq!(state.buckets[3].ops[0].data.as_deref(), Some(r#"{"n":13,"x":1}"#));
        assert_eq!(state.buckets[3].ops[0].op_id, 101);
        state.apply_crud(&json!({"op": "PUT", "type": "todos", "id": "t1", "data": {"a": "b"}})).unwrap();
        assert_eq!(state.buckets.last().unwrap().name, UPLOADS_BUCKET);
        state.apply_crud(&json!({"op": "DELETE", "type": "todos", "id": "t1"})).unwrap();
        assert_eq!(state.buckets.last().unwrap().ops.len(), 2);
        assert_eq!(state.buckets.last().unwrap().ops[1].op, "REMOVE");
        // Entries add the uploaded ops to the generated part.
        let entry = state.buckets[3].entry();
        assert_eq!(entry.count, 11);
        assert!(state.apply_crud(&json!({"op": "NOPE", "type": "a", "id": "b"})).is_err());
    }

    #[test]
    fn a_checkpoint_request_keeps_the_larger_of_the_client_id_and_the_record() {
        let mut state = State::new(&ServiceOptions::new(Dataset::Buckets(Vec::new())));
        // No record: the client's id is taken (the first request of a
        // connection probes with at least 1).
        assert_eq!(state.request_checkpoint("c1", 1), (1, true));
        assert_eq!(state.request_checkpoint("c1", 5), (5, true));
        // Stale and repeated ids answer the record and change nothing: a
        // client that lost its state is hydrated from the answer.
        assert_eq!(state.request_checkpoint("c1", 2), (5, false));
        assert_eq!(state.request_checkpoint("c1", 5), (5, false));
        // Records are per client.
        assert_eq!(state.request_checkpoint("c2", 3), (3, true));
        // A service that lost its record takes the client's hint again.
        state.write_checkpoints.clear();
        assert_eq!(state.request_checkpoint("c1", 4), (4, true));
        // Generated write checkpoints count on from the same record.
        assert_eq!(state.create_write_checkpoint("c1"), 5);
        assert_eq!(state.request_checkpoint("c1", 5), (5, false));
        assert_eq!(state.create_write_checkpoint("new"), 1);
        assert_eq!(state.request_checkpoint("c1", i64::MAX), (i64::MAX, true));
    }
}
