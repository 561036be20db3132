package dev.oplite

import androidx.sqlite.SQLiteConnection
import androidx.sqlite.driver.bundled.BundledSQLiteDriver
import androidx.test.ext.junit.runners.AndroidJUnit4
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Test
import org.junit.runner.RunWith

/**
 * On a device or emulator: liboplite.so from this AAR loads into
 * androidx.sqlite's bundled SQLite and its functions work.
 * Run with `gradle :oplite:connectedAndroidTest`.
 */
@RunWith(AndroidJUnit4::class)
public class OpliteTest {
    private fun SQLiteConnection.text(sql: String): String {
        val statement = prepare(sql)
        try {
            assertTrue("no row from $sql", statement.step())
            return statement.getText(0)
        } finally {
            statement.close()
        }
    }

    private fun SQLiteConnection.run(sql: String) {
        val statement = prepare(sql)
        try {
            statement.step()
        } finally {
            statement.close()
        }
    }

    @Test
    public fun loadsIntoTheBundledSqliteAndInitialises() {
        Oplite.load()
        val driver = BundledSQLiteDriver()
        driver.addExtension(Oplite.EXTENSION_FILE, Oplite.ENTRY_POINT)
        val db = driver.open(":memory:")
        try {
            assertTrue(db.text("SELECT powersync_rs_version()").startsWith("0.5."))
            assertTrue(db.text("SELECT oplite_version()").startsWith("oplite "))
            db.run("BEGIN")
            db.run("SELECT powersync_init()")
            db.run("COMMIT")
            assertEquals("1", db.text("SELECT count(*) FROM sqlite_master WHERE name = 'ps_oplog'"))
            assertEquals(36, db.text("SELECT powersync_client_id()").length)
        } finally {
            db.close()
        }
    }

    @Test
    public fun oplitesOwnEntryPointRegistersTheSameFunctions() {
        Oplite.load()
        val driver = BundledSQLiteDriver()
        driver.addExtension(Oplite.EXTENSION_FILE, Oplite.OPLITE_ENTRY_POINT)
        val db = driver.open(":memory:")
        try {
            assertEquals(36, db.text("SELECT uuid()").length)
        } finally {
            db.close()
        }
    }
}
