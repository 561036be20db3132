// swift-tools-version:5.9
// oplite for Swift Package Manager: the static library in
// build/Oplite.xcframework (made by build-xcframework.sh) as the binary
// target `OpliteC`, and a small Swift target `Oplite` over it.
//
// As a local package: .package(path: "<oplite>/ios"). To publish, upload
// build/Oplite.xcframework.zip and replace the binary target's `path:` with
// `url:` and the `checksum:` that build-xcframework.sh prints.
import PackageDescription

let package = Package(
    name: "Oplite",
    platforms: [.iOS(.v13), .macOS(.v11)],
    products: [
        .library(name: "Oplite", targets: ["Oplite"]),
    ],
    targets: [
        .binaryTarget(name: "OpliteC", path: "build/Oplite.xcframework"),
        .target(
            name: "Oplite",
            dependencies: ["OpliteC"],
            path: "Sources/Oplite",
            // oplite calls SQLite directly; by default that is the system's
            // libsqlite3. An app that ships its own SQLite (3.44 or newer)
            // links that instead and its symbols are the ones used.
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
    ]
)
