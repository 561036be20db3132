#!/usr/bin/env python3
"""liboplite.so inside SQLite3MultipleCiphers (PyPI's apsw-sqlite3mc, whose
SQLite is built with it; ChaCha20, the cipher @powersync/web's encrypted
database uses): a sync fed line by line, the upload queue and the schema's
views on an encrypted file; no plaintext in the stored bytes, checked
against the same run unencrypted; a wrong or missing key refused without
changing the file; and a process killed (SIGKILL) while it stores a sync,
whose file opens with the key, passes integrity_check, and resumes from the
stored positions with its queued upload intact.

    python3 cipher/multiple_ciphers.py [path/to/liboplite.so]

Default library: $OPLITE_SO, else target/release/liboplite.so. Needs
`pip install apsw-sqlite3mc` (scripts/test-cipher.sh makes a virtual
environment with it). Ends with `N passed, M failed`.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apsw

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = Path(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "--child" else
               os.environ.get("OPLITE_SO", ROOT / "target/release/liboplite.so"))
KEY = "correct horse 'battery' staple"
LOCAL_MARKER = "local-marker-5d1c9e0b"
SYNCED_MARKER = "synced-marker-"
HEADER = "SQLite format 3"
TODO_LINES = ROOT / "test-data/recorded/todo-list/stream.ndjson"
SCHEMA = {"tables": [
    {"name": "lists", "columns": [{"name": "name", "type": "text"}, {"name": "owner_id", "type": "text"}]},
    {"name": "todos", "columns": [{"name": "list_id", "type": "text"}, {"name": "description", "type": "text"},
                                  {"name": "completed", "type": "integer"}]},
    {"name": "items", "columns": [{"name": "text", "type": "text"}]},
]}


def connect(path, key):
    """A connection to `path` with oplite loaded, keyed with `key` (None: plain)."""
    conn = apsw.Connection(str(path))
    if key is not None:
        conn.execute("PRAGMA key = '%s'" % key.replace("'", "''"))
    conn.enable_load_extension(True)
    conn.load_extension(str(LIBRARY), "sqlite3_powersync_init")
    conn.enable_load_extension(False)
    return conn


def one(conn, sql, *args):
    rows = conn.execute(sql, args).fetchall()
    return rows[0][0] if rows else None


def control(conn, op, payload):
    """powersync_control in its own transaction, as the SDKs call it."""
    conn.execute("BEGIN IMMEDIATE")
    out = one(conn, "SELECT powersync_control(?, ?)", op, payload)
    conn.execute("COMMIT")
    return json.loads(out) if out else []


def setup(conn):
    conn.execute("BEGIN")
    one(conn, "SELECT powersync_init()")
    one(conn, "SELECT powersync_replace_schema(?)", json.dumps(SCHEMA))
    conn.execute("COMMIT")


def start(conn):
    """Starts an iteration; returns the buckets' stored positions."""
    for instruction in control(conn, "start", json.dumps({"parameters": {}})):
        if "EstablishSyncStream" in instruction:
            return {b["name"]: int(b["after"]) for b in instruction["EstablishSyncStream"]["request"]["buckets"]}
    raise AssertionError("start gave no EstablishSyncStream")


def generated_lines(ops, after=0, per_line=100):
    """A one-bucket stream of `ops` PUTs of `items`, sent from `after` on."""
    def op(i):
        return {"op_id": str(i), "op": "PUT", "object_type": "items", "object_id": f"i{i}",
                "data": json.dumps({"text": f"{SYNCED_MARKER}{i}"}), "checksum": i * 7919 % 1000003}
    total = sum(op(i)["checksum"] for i in range(1, ops + 1)) % 2**32
    yield {"checkpoint": {"last_op_id": str(ops), "write_checkpoint": None,
                          "buckets": [{"bucket": "b", "checksum": total, "count": ops, "priority": 3}]}}
    for first in range(after + 1, ops + 1, per_line):
        last = min(first + per_line - 1, ops)
        yield {"data": {"bucket": "b", "after": str(first - 1), "next_after": str(last), "has_more": last < ops,
                        "data": [op(i) for i in range(first, last + 1)]}}
    yield {"checkpoint_complete": {"last_op_id": str(ops)}}


def plaintext(folder, needles):
    found = []
    for path in sorted(Path(folder).iterdir()):
        data = path.read_bytes()
        found += [f"{n!r} in {path.name}" for n in needles if n.encode() in data]
    return found


def files(folder):
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir())}


def sync_todos_and_queue(folder, key):
    """The recorded todo list synced line by line, a local write queued."""
    conn = connect(folder / "todo.db", key)
    setup(conn)
    start(conn)
    for line in TODO_LINES.read_text().splitlines():
        control(conn, "line_text", line)
    assert one(conn, "SELECT count(*) FROM todos") == 4, "the todo list did not apply"
    conn.execute("INSERT INTO todos(id, list_id, description, completed) VALUES ('t9', 'l1', ?, 0)", (LOCAL_MARKER,))
    queued = json.loads(one(conn, "SELECT data FROM ps_crud"))
    assert (queued["op"], queued["id"]) == ("PUT", "t9"), queued
    conn.close()


def check_build(work):
    conn = apsw.Connection(":memory:")
    cipher, version = one(conn, "PRAGMA cipher"), one(conn, "SELECT sqlite3mc_version()")
    print(f"  {version}, SQLite {apsw.sqlite_lib_version()}, default cipher {cipher}")
    assert cipher == "chacha20", cipher


def check_no_plaintext(work):
    needles = ["Groceries", "Work (shared)", LOCAL_MARKER, HEADER]
    plain, encrypted = work / "plain", work / "encrypted"
    plain.mkdir(), encrypted.mkdir()
    sync_todos_and_queue(plain, None)
    assert len(plaintext(plain, needles)) == len(needles), f"the search misses plaintext: {plaintext(plain, needles)}"
    sync_todos_and_queue(encrypted, KEY)
    assert plaintext(encrypted, needles) == [], plaintext(encrypted, needles)
    conn = connect(encrypted / "todo.db", KEY)
    assert one(conn, "SELECT description FROM todos WHERE id = 't9'") == LOCAL_MARKER
    assert (one(conn, "SELECT count(*) FROM todos"), one(conn, "SELECT count(*) FROM ps_crud")) == (5, 1)
    assert one(conn, "PRAGMA integrity_check") == "ok"


def check_wrong_key(work):
    folder = work / "wrong-key"
    folder.mkdir()
    sync_todos_and_queue(folder, KEY)
    before = files(folder)
    for key in ["not the key", None]:
        try:
            conn = connect(folder / "todo.db", key)
            one(conn, "SELECT count(*) FROM ps_crud")
            raise AssertionError(f"key {key!r}: the file opened")
        except apsw.NotADBError as e:
            assert "file is not a database" in str(e), str(e)
        assert files(folder) == before, f"key {key!r}: the files changed"
    assert one(connect(folder / "todo.db", KEY), "SELECT count(*) FROM ps_crud") == 1


def child(path, ops):
    """Stores a generated stream into `path` until killed (or done)."""
    conn = connect(path, KEY)
    start(conn)
    for line in generated_lines(ops):
        control(conn, "line_text", json.dumps(line))
        print("line", flush=True)


def check_kill(work):
    ops = 30_000
    folder = work / "kill"
    folder.mkdir()
    path = folder / "app.db"
    conn = connect(path, KEY)
    setup(conn)
    conn.execute("INSERT INTO items(id, text) VALUES ('mine', ?)", (LOCAL_MARKER,))
    conn.close()
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(path), str(ops)], stdout=subprocess.PIPE, text=True)
    for lines, _ in enumerate(proc.stdout, 1):
        if lines == 100:  # a third of the data lines stored
            break
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, proc.returncode

    conn = connect(path, KEY)
    assert one(conn, "PRAGMA integrity_check") == "ok"
    assert one(conn, "SELECT count(*) FROM ps_crud") == 1, "the queued upload is gone"
    after = start(conn)
    held = one(conn, "SELECT count(*) FROM ps_oplog")
    assert held > 0 and after.get("b") == held, f"stored positions {after}, {held} ops held"
    for line in generated_lines(ops, after=after["b"]):
        control(conn, "line_text", json.dumps(line))
    print(f"  killed with {held} of {ops} ops stored; resumed after op {after['b']}")
    assert one(conn, "SELECT count(*) FROM ps_oplog") == ops, "the resumed stream was not stored whole"
    # The queued write holds the checkpoint back from the tables until it
    # is uploaded, as in the reference core.
    assert (one(conn, "SELECT count(*) FROM items"), one(conn, "SELECT count(*) FROM ps_crud")) == (1, 1)
    assert one(conn, "PRAGMA integrity_check") == "ok"
    conn.close()
    assert plaintext(folder, [SYNCED_MARKER, LOCAL_MARKER, HEADER]) == []


CHECKS = [
    ("the host's SQLite is SQLite3MultipleCiphers with ChaCha20 by default", check_build),
    ("an encrypted file syncs, keeps its upload queue and holds no plaintext (the unencrypted run shows the search finds it)", check_no_plaintext),
    ("a wrong or missing key is refused with 'file is not a database' and changes no file", check_wrong_key),
    ("a process killed mid-sync leaves an encrypted file that opens with the key and resumes from its stored positions", check_kill),
]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
        return 0
    if not LIBRARY.exists():
        print(f"{LIBRARY} is missing: build it (cargo build --release --manifest-path loadable/Cargo.toml) or set OPLITE_SO")
        return 2
    passed = failed = 0
    work = Path(tempfile.mkdtemp(prefix="oplite-mc-"))
    try:
        for i, (what, check) in enumerate(CHECKS):
            folder = work / str(i)
            folder.mkdir()
            try:
                check(folder)
                passed += 1
                print(f"ok: {what}")
            except Exception as e:  # a failed check is reported, the rest still run
                failed += 1
                print(f"FAILED: {what}: {type(e).__name__}: {e}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"multiple-ciphers: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
