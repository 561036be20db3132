//! The sync protocol engine (see docs/protocol.md).
//!
//! The host owns the network and calls `powersync_control(op, payload)`
//! with each event; the engine stores what arrives, validates checkpoints,
//! applies them through [`crate::sync_local`], and answers with a JSON array
//! of [`instruction::Instruction`]s.
//!
//! - [`line`]: sync lines decoded from JSON or BSON into typed structs.
//! - [`checksum`]: wrapping u32 checksums.
//! - [`data_line`]: storing ops in ps_oplog.
//! - [`storage`]: the other SQL on ps_buckets, ps_oplog, ps_kv, ps_sync_state.
//! - [`client`]: the state machine between calls.
//! - [`progress`]: download progress kept line by line, and the bucket counters.
//! - [`requests`]: checkpoint requests (`checkpoint_mode: "requests"`).
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
pub mod status;
pub mod storage;
pub mod streams;

use std::cell::RefCell;
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

/// Registers `powersync_control` and `powersync_offline_sync_status`.
pub fn register(db: &Connection) -> Result<()> {
    let client = Rc::new(RefCell::new(SyncClient::default()));
    let control_client = client.clone();
    register_scalar(
        db,
        "powersync_control",
        2,
        Purity::DirectOnly,
        Box::new(move |db, args| {
            require_transaction(db, "powersync_control")?;
            let op = text_arg(args, 0, "powersync_control")?.ok_or_else(|| OpliteError::InvalidArgument {
                function: "powersync_control",
                message: "argument 1 (the operation) must not be NULL".into(),
                type_mismatch: false,
            })?;
            let payload = match args.get(1) {
                None | Some(ValueRef::Null) => Payload::Null,
                Some(ValueRef::Text(bytes)) => Payload::Text(std::str::from_utf8(bytes).map_err(|_| {
                    OpliteError::InvalidArgument {
                        function: "powersync_control",
                        message: "argument 2 is not valid UTF-8".into(),
                        type_mismatch: false,
                    }
                })?),
                Some(ValueRef::Blob(bytes)) => Payload::Blob(bytes),
                Some(ValueRef::Integer(i)) => Payload::Integer(*i),
                Some(ValueRef::Real(_)) => Payload::Other,
            };
            let mut client = control_client.try_borrow_mut().map_err(|_| OpliteError::Misuse {
                function: "powersync_control",
                reason: "called again while a call is running".into(),
            })?;
            let result = client.control(db, op, payload);
            // powersync_clear(2) and powersync_trigger_resync refuse to run
            // while an iteration is active.
            crate::schema::set_sync_iteration_active(db, client.has_iteration());
            Ok(match result? {
                ControlResult::Instructions(instructions) => Value::Text(instruction::to_json(&instructions)),
                ControlResult::Value(Some(v)) => Value::Integer(v),
                ControlResult::Value(None) => Value::Null,
            })
        }),
    )?;
    let setting_client = client.clone();
    register_scalar(
        db,
        "oplite_sync_local_strategy",
        1,
        Purity::DirectOnly,
        Box::new(move |_, args| {
            let name = text_arg(args, 0, "oplite_sync_local_strategy")?.unwrap_or("auto");
            let setting = match name {
                "auto" => Setting::Auto,
                other => Setting::Force(Strategy::from_name(other).ok_or_else(|| OpliteError::InvalidArgument {
                    function: "oplite_sync_local_strategy",
                    message: format!("unknown strategy {other:?} (expected auto, incremental or from_scratch)"),
                    type_mismatch: false,
                })?),
            };
            let mut client = setting_client.try_borrow_mut().map_err(|_| OpliteError::Misuse {
                function: "oplite_sync_local_strategy",
                reason: "called while powersync_control runs".into(),
            })?;
            client.strategy = setting;
            Ok(Value::Text(name.to_owned()))
        }),
    )?;
    let report_client = client.clone();
    register_scalar(
        db,
        "oplite_last_apply",
        0,
        Purity::Volatile,
        Box::new(move |_, _| {
            let client = report_client.try_borrow().map_err(|_| OpliteError::Misuse {
                function: "oplite_last_apply",
                reason: "called while powersync_control runs".into(),
            })?;
            Ok(client.last_apply.as_ref().map_or(Value::Null, |r| Value::Text(r.to_json())))
        }),
    )?;
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
