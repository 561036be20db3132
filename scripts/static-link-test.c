/*
 * Links oplite's static library the way an app does (its own SQLite, the
 * header include/oplite.h, oplite_auto_extension() before opening
 * connections) and checks, in C, that the functions are there, that
 * powersync_init() creates the internal tables, and that error codes cross
 * the C boundary intact. Built and run by scripts/test-arm64.sh for
 * aarch64-unknown-linux-gnu under qemu; prints one line per check.
 */
#include <stdio.h>
#include <string.h>

#include "sqlite3.h"
#include "oplite.h"

static int failures = 0;

static void check(int ok, const char *what, const char *detail) {
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, detail ? ": " : "", detail ? detail : "");
    if (!ok) failures++;
}

/* The first column of the first row of `sql`, copied into `out`. */
static int query_text(sqlite3 *db, const char *sql, char *out, size_t size) {
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(stmt);
        if (rc == SQLITE_ROW) {
            const unsigned char *text = sqlite3_column_text(stmt, 0);
            snprintf(out, size, "%s", text ? (const char *)text : "NULL");
            rc = SQLITE_OK;
        }
    }
    if (rc != SQLITE_OK) snprintf(out, size, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(stmt);
    return rc;
}

int main(void) {
    char text[256];
    sqlite3 *db = NULL;

    printf("SQLite %s\n", sqlite3_libversion());
    check(oplite_auto_extension() == SQLITE_OK, "oplite_auto_extension()", NULL);
    check(oplite_auto_extension() == SQLITE_OK, "oplite_auto_extension() again", NULL);

    check(sqlite3_open(":memory:", &db) == SQLITE_OK, "open", NULL);
    check(query_text(db, "SELECT oplite_version()", text, sizeof text) == SQLITE_OK
              && strncmp(text, "oplite ", 7) == 0,
          "oplite_version()", text);
    check(query_text(db, "SELECT powersync_rs_version()", text, sizeof text) == SQLITE_OK,
          "powersync_rs_version()", text);

    /* Outside a transaction: SQLITE_MISUSE, not a generic error. */
    int rc = query_text(db, "SELECT powersync_init()", text, sizeof text);
    snprintf(text + strlen(text), sizeof text - strlen(text), " (code %d)", sqlite3_errcode(db));
    check(rc == SQLITE_MISUSE || sqlite3_errcode(db) == SQLITE_MISUSE,
          "powersync_init() outside a transaction is SQLITE_MISUSE", text);

    char *err = NULL;
    rc = sqlite3_exec(db, "BEGIN; SELECT powersync_init(); COMMIT;", NULL, NULL, &err);
    check(rc == SQLITE_OK, "powersync_init() in a transaction", err);
    sqlite3_free(err);
    check(query_text(db, "SELECT count(*) FROM sqlite_master WHERE name = 'ps_oplog'", text, sizeof text) == SQLITE_OK
              && strcmp(text, "1") == 0,
          "ps_oplog exists", text);
    check(query_text(db, "SELECT length(powersync_client_id())", text, sizeof text) == SQLITE_OK
              && strcmp(text, "36") == 0,
          "powersync_client_id() is a UUID", text);
    sqlite3_close(db);

    /* The entry point by name, on a connection, as load_extension would. */
    check(sqlite3_open(":memory:", &db) == SQLITE_OK, "open a second connection", NULL);
    err = NULL;
    rc = sqlite3_powersync_init(db, &err, NULL);
    check(rc == SQLITE_OK, "sqlite3_powersync_init(db) called directly", err);
    sqlite3_free(err);
    check(query_text(db, "SELECT uuid()", text, sizeof text) == SQLITE_OK && strlen(text) == 36, "uuid()", text);
    sqlite3_close(db);

    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
