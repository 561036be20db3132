/*
 * oplite: an offline-first client sync engine for SQLite, compatible with
 * the PowerSync protocol. C API of the static library (Android, iOS) and of
 * the loadable library (liboplite.so / the Android AAR).
 *
 * Static builds link against the SQLite the app ships; call
 * oplite_auto_extension() once, before opening connections, and every
 * connection opened afterwards has oplite's SQL functions
 * (powersync_init(), powersync_control(), ...).
 *
 * The entry points have SQLite's extension-init signature and can also be
 * passed to sqlite3_auto_extension() directly, or named in
 * load_extension() for the loadable library.
 */
#ifndef OPLITE_H
#define OPLITE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque SQLite types, so this header does not depend on sqlite3.h. They
 * are the same structs as sqlite3.h's (C allows repeating these
 * declarations). */
struct sqlite3;
struct sqlite3_api_routines;

/*
 * Registers oplite with sqlite3_auto_extension(): every connection opened
 * from now on gets oplite's functions. Returns a SQLite result code
 * (SQLITE_OK is 0). Calling it again is harmless. Static builds only.
 */
int oplite_auto_extension(void);

/*
 * Registers oplite's functions on one open connection. Returns a SQLite
 * result code; on failure *pzErrMsg (if not NULL) receives a message
 * allocated with sqlite3_malloc(). pApi is the routine table SQLite passes
 * to extensions (may be NULL in static builds).
 */
int sqlite3_oplite_init(struct sqlite3 *db, char **pzErrMsg,
                        const struct sqlite3_api_routines *pApi);

/* The same, under the name the PowerSync SDKs look up. */
int sqlite3_powersync_init(struct sqlite3 *db, char **pzErrMsg,
                           const struct sqlite3_api_routines *pApi);

#ifdef __cplusplus
}
#endif

#endif /* OPLITE_H */
