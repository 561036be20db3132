# oplite for CocoaPods: the static library in build/Oplite.xcframework (made
# by build-xcframework.sh) with its C header and module map (module
# `OpliteC`). Use it as a local pod: pod 'Oplite', :path => '<oplite>/ios'
# (paths below are relative to this directory). To publish, set `source` to
# { :http => '<url of Oplite.xcframework.zip>' } and vendored_frameworks to
# 'Oplite.xcframework'.
cargo_toml = File.read(File.join(__dir__, '..', 'Cargo.toml'))

Pod::Spec.new do |s|
  s.name         = 'Oplite'
  s.version      = cargo_toml[/^version = "([^"]+)"/, 1]
  s.summary      = 'An offline-first sync engine for SQLite, compatible with the PowerSync protocol.'
  s.description  = 'oplite is a SQLite extension written in Rust that keeps a local database in sync ' \
                   'with a PowerSync service. Call oplite_auto_extension() once before opening connections.'
  s.homepage     = 'https://example.invalid/oplite'
  s.license      = { :type => 'Apache-2.0' }
  s.author       = 'oplite'
  s.source       = { :git => 'https://example.invalid/oplite.git', :tag => "v#{s.version}" }

  s.ios.deployment_target = '13.0'
  s.osx.deployment_target = '11.0'

  s.vendored_frameworks = 'build/Oplite.xcframework'
  # oplite calls SQLite directly: the system's libsqlite3 unless the app
  # links its own (3.44 or newer; see ios/README.md).
  s.libraries = 'sqlite3'
end
