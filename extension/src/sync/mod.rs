//! The sync protocol engine (see docs/protocol.md).
//!
//! The host owns the network and calls `powersync_control(op, payload)`
//! with each event; the engine stores what arrives, validates checkpoints,
//! applies them through [`crate::sync_local`], and answers with a JSON array
//! of [`instruction::Instruction`]s.
//!
//! - [`line`](mod@line): sync lines decoded from JSON or BSON into typed structs.
//! - [`checksum`]: wrapping u32 checksums.
//! - [`data_line`]: storing ops in ps_oplog.
//! - [`storage`]: the other SQL on ps_buckets, ps_oplog, ps_kv, ps_sync_state.
//! - [`client`]: the state machine between calls.
//! - [`progress`]: download progress kept line by line, and the bucket counters.
//! - [`requests`]: checkpoint requests (`checkpoint_mode: "requests"`).
//! - [`start`]: the options of a sync iteration; [`streams`]: stream
//!   subscriptions; [`diagnostics`]: the events `start` can ask for.
//! - [`status`], [`instruction`]: what goes back to the host.

pub mod checksum;
pub mod client;
pub mod data_line;
pub mod diagnostics;
pub mod instruction;
pub mod line;
pub mod payload;
pub mod progress;
pub mod requests;
pub mod start;
pub mod status;
pub mod storage;
pub mod streams;

use std::cell::RefCell;
use std::ffi::c_int;
use std::rc::Rc;

use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

use crate::error::{OpliteError, Result};
use crate::sql_args::{require_transaction, text_arg};
use crate::sqlite::{register_scalar, Purity};
use client::{ControlResult, SyncClient};
use payload::Payload;
use crate::sync_local::{Setting, Strategy};
use status::SyncStatus;

/// The error of a function called while `powersync_control` runs.
fn busy(function: &'static str) -> OpliteError {
    OpliteError::Misuse { function, reason: "called while powersync_control runs".into() }
}

/// Argument 2 of `powersync_control` (and `oplite_apply_prepare`): the payload.
fn payload_arg<'a>(args: &[ValueRef<'a>], function: &'static str) -> Result<Payload<'a>> {
    Ok(match args.get(1) {
        None | Some(ValueRef::Null) => Payload::Null,
        Some(ValueRef::Text(bytes)) => Payload::Text(std::str::from_utf8(bytes).map_err(|_| {
            OpliteError::InvalidArgument { function, message: "argument 2 is not valid UTF-8".into(), type_mismatch: false }
        })?),
        Some(ValueRef::Blob(bytes)) => Payload::Blob(bytes),
        Some(ValueRef::Integer(i)) => Payload::Integer(*i),
        Some(ValueRef::Real(_)) => Payload::Other,
    })
}

/// Registers a function whose body works on the connection's sync client.
/// The client is borrowed for the whole call, so a call made while another
/// holds it (from the app's triggers during an apply) is refused as misuse.
fn register_with_client(
    db: &Connection,
    client: &Rc<RefCell<SyncClient>>,
    name: &'static str,
    n_args: c_int,
    purity: Purity,
    body: impl Fn(&Connection, &[ValueRef<'_>], &mut SyncClient) -> Result<Value> + 'static,
) -> Result<()> {
    let client = client.clone();
    let body = move |db: &Connection, args: &[ValueRef<'_>]| {
        let mut client = client.try_borrow_mut().map_err(|_| busy(name))?;
        body(db, args, &mut client)
    };
    register_scalar(db, name, n_args, purity, Box::new(body))
}

/// Registers `powersync_control` (with `oplite_apply_prepare` and
/// `oplite_apply_step`, its apply in steps: see `client/stepped.rs`, and
/// the strategy and report functions) and `powersync_offline_sync_status`.
pub fn register(db: &Connection) -> Result<()> {
    let client = Rc::new(RefCell::new(SyncClient::default()));
    register_with_client(db, &client, "powersync_control", 2, Purity::DirectOnly, |db, args, client| {
        require_transaction(db, "powersync_control")?;
        let op = text_arg(args, 0, "powersync_control")?.ok_or_else(|| OpliteError::InvalidArgument {
            function: "powersync_control",
            message: "argument 1 (the operation) must not be NULL".into(),
            type_mismatch: false,
        })?;
        let payload = payload_arg(args, "powersync_control")?;
        let result = client.control(db, op, payload);
        // powersync_clear(2) and powersync_trigger_resync refuse to run
        // while an iteration is active.
        crate::schema::set_sync_iteration_active(db, client.has_iteration());
        Ok(match result? {
            ControlResult::Instructions(instructions) => Value::Text(instruction::to_json(&instructions)),
            ControlResult::Value(Some(v)) => Value::Integer(v),
            ControlResult::Value(None) => Value::Null,
        })
    })?;
    register_with_client(db, &client, "oplite_apply_prepare", 2, Purity::DirectOnly, |db, args, client| {
        require_transaction(db, "oplite_apply_prepare")?;
        let op = text_arg(args, 0, "oplite_apply_prepare")?.unwrap_or_default();
        let payload = payload_arg(args, "oplite_apply_prepare")?;
        Ok(Value::Integer(client.prepare_apply(db, op, payload)?.into()))
    })?;
    register_with_client(db, &client, "oplite_apply_step", 1, Purity::DirectOnly, |db, args, client| {
        require_transaction(db, "oplite_apply_step")?;
        let budget = match args.first() {
            Some(ValueRef::Integer(n)) if *n > 0 => *n as u64,
            _ => {
                return Err(OpliteError::InvalidArgument {
                    function: "oplite_apply_step",
                    message: "argument 1 (rows per step) must be a positive integer".into(),
                    type_mismatch: true,
                })
            }
        };
        Ok(Value::Integer(client.apply_step(db, budget)? as i64))
    })?;
    register_with_client(db, &client, "oplite_sync_local_strategy", 1, Purity::DirectOnly, |_, args, client| {
        let name = text_arg(args, 0, "oplite_sync_local_strategy")?.unwrap_or("auto");
        client.strategy = match name {
            "auto" => Setting::Auto,
            other => Setting::Force(Strategy::from_name(other).ok_or_else(|| OpliteError::InvalidArgument {
                function: "oplite_sync_local_strategy",
                message: format!("unknown strategy {other:?} (expected auto, incremental or from_scratch)"),
                type_mismatch: false,
            })?),
        };
        Ok(Value::Text(name.to_owned()))
    })?;
    register_with_client(db, &client, "oplite_last_apply", 0, Purity::Volatile, |_, _, client| {
        Ok(client.last_apply.as_ref().map_or(Value::Null, |r| Value::Text(r.to_json())))
    })?;
    register_scalar(
        db,
        "powersync_offline_sync_status",
        0,
        Purity::DirectOnly,
        Box::new(|db, _| {
            let status = SyncStatus {
                priority_status: storage::sync_state(db)?,
                streams: streams::offline(db)?,
                ..Default::default()
            };
            Ok(Value::Text(serde_json::to_string(&status).unwrap_or_default()))
        }),
    )
}
