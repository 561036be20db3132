package dev.oplite

/**
 * oplite for Android: the SQLite extension `liboplite.so`, shipped in this
 * AAR for arm64-v8a, armeabi-v7a, x86_64 and x86.
 *
 * oplite runs inside the SQLite your app ships, which loads it as an
 * extension. With androidx.sqlite's bundled driver (2.6 or newer):
 *
 * ```kotlin
 * Oplite.load()
 * val driver = BundledSQLiteDriver().apply {
 *     addExtension(Oplite.EXTENSION_FILE, Oplite.ENTRY_POINT)
 * }
 * ```
 *
 * With requery's sqlite-android, add
 * `SQLiteCustomExtension(Oplite.EXTENSION_FILE, Oplite.ENTRY_POINT)` to the
 * database configuration. The PowerSync SDK loads it under the same entry
 * point. Android's own `android.database.sqlite` cannot load extensions.
 *
 * Every connection then has oplite's SQL functions: `powersync_init()`,
 * `powersync_control(...)`, `oplite_version()` and the rest.
 */
public object Oplite {
    /** The name for [System.loadLibrary]. */
    public const val LIBRARY_NAME: String = "oplite"

    /**
     * The file name to give SQLite's `load_extension()`. Android's dynamic
     * linker finds it among the app's native libraries, also when they stay
     * uncompressed inside the APK; after [load] it is already in memory.
     */
    public const val EXTENSION_FILE: String = "liboplite.so"

    /** The entry point the PowerSync SDKs use. */
    public const val ENTRY_POINT: String = "sqlite3_powersync_init"

    /** oplite's own name for the same entry point. */
    public const val OPLITE_ENTRY_POINT: String = "sqlite3_oplite_init"

    @Volatile
    private var loaded = false

    /**
     * Loads `liboplite.so` into the process, so that a later
     * `load_extension("liboplite.so", ...)` finds it by its SONAME. Safe to
     * call more than once.
     *
     * @throws UnsatisfiedLinkError if this device's ABI is not in the AAR.
     */
    @JvmStatic
    public fun load() {
        if (loaded) return
        synchronized(this) {
            if (!loaded) {
                System.loadLibrary(LIBRARY_NAME)
                loaded = true
            }
        }
    }
}
