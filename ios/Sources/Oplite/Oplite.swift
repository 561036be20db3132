// The Swift face of oplite's static library: one call before opening
// connections. The C declarations (include/oplite.h) are re-exported, so
// `sqlite3_powersync_init` is available too.
@_exported import OpliteC

public enum Oplite {
    /// Registers oplite with `sqlite3_auto_extension`: every SQLite
    /// connection opened afterwards in this process has oplite's functions
    /// (`powersync_init()`, `powersync_control(...)`, ...). Returns SQLite's
    /// result code (0 is SQLITE_OK); calling it again is harmless.
    @discardableResult
    public static func registerAutoExtension() -> Int32 {
        oplite_auto_extension()
    }
}
