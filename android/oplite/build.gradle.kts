// :oplite, an Android library whose AAR carries liboplite.so for four ABIs,
// both as jniLibs (for apps whose SQLite loads extensions: androidx.sqlite's
// bundled driver, requery's sqlite-android, the PowerSync SDK) and as a
// prefab module (for native code: find_package(oplite) in CMake), plus the
// small Kotlin object dev.oplite.Oplite. The .so files come from
// ../build-jni.sh (cargo-ndk), run by the task cargoBuild before every build.
import org.gradle.api.tasks.bundling.Zip

plugins {
    id("com.android.library")
    id("org.jetbrains.kotlin.android")
    `maven-publish`
}

val repoRoot: File = rootProject.projectDir.parentFile
val rustOut = layout.buildDirectory.dir("rust")
val cargoVersion: String = Regex("""(?m)^version = "([^"]+)"""")
    .find(repoRoot.resolve("Cargo.toml").readText())!!.groupValues[1]

group = "dev.oplite"
version = cargoVersion

android {
    namespace = "dev.oplite"
    compileSdk = 35

    defaultConfig {
        minSdk = (findProperty("oplite.androidApi") as String?)?.toInt() ?: 23
        testInstrumentationRunner = "androidx.test.runner.AndroidJUnitRunner"
    }

    sourceSets["main"].jniLibs.srcDir(rustOut.map { it.dir("jniLibs") })

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }

    publishing {
        singleVariant("release") {
            withSourcesJar()
        }
    }
}

kotlin {
    jvmToolchain(17)
    explicitApi()
}

dependencies {
    androidTestImplementation("androidx.test:runner:1.6.2")
    androidTestImplementation("androidx.test.ext:junit:1.2.1")
    // addExtension() on the bundled driver needs androidx.sqlite 2.6 or newer.
    androidTestImplementation("androidx.sqlite:sqlite-bundled:2.6.0")
}

// Builds liboplite.so for every ABI into build/rust/{jniLibs,prefab} and
// checks alignment, SONAME and exports (see ../build-jni.sh).
val cargoBuild by tasks.registering(Exec::class) {
    description = "Builds liboplite.so for the Android ABIs with cargo-ndk"
    workingDir = repoRoot
    val out = rustOut.get().asFile
    commandLine("bash", repoRoot.resolve("android/build-jni.sh").path, out.path)
    environment("OPLITE_ANDROID_API", android.defaultConfig.minSdk.toString())
    (findProperty("oplite.abis") as String?)?.let { environment("OPLITE_ANDROID_ABIS", it) }
    // cargo-ndk finds the NDK through ANDROID_NDK_HOME, or the newest one in
    // ANDROID_HOME/ndk; Android Studio only writes the SDK to local.properties.
    if (System.getenv("ANDROID_NDK_HOME") == null && System.getenv("ANDROID_HOME") == null) {
        val localProperties = java.util.Properties()
        rootProject.file("local.properties").takeIf { it.exists() }?.reader()?.use { localProperties.load(it) }
        localProperties.getProperty("sdk.dir")?.let { environment("ANDROID_HOME", it) }
    }
    inputs.dir(repoRoot.resolve("extension/src"))
    inputs.dir(repoRoot.resolve("sql"))
    inputs.files(repoRoot.resolve("Cargo.toml"), repoRoot.resolve("Cargo.lock"), repoRoot.resolve("extension/Cargo.toml"))
    inputs.file(repoRoot.resolve("include/oplite.h"))
    outputs.dir(out)
}

tasks.named("preBuild") { dependsOn(cargoBuild) }

// The AAR's prefab/ directory (the prefab module) comes from build-jni.sh;
// AGP's own prefab publishing only handles libraries built by CMake or
// ndk-build, so it is added to the AAR here.
tasks.withType<Zip>().matching { it.name.startsWith("bundle") && it.name.endsWith("Aar") }.configureEach {
    dependsOn(cargoBuild)
    from(rustOut.map { it.dir("prefab") }) { into("prefab") }
}

publishing {
    publications {
        register<MavenPublication>("release") {
            artifactId = "oplite-android"
            afterEvaluate { from(components["release"]) }
        }
    }
}
