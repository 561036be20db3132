// The Android packaging of oplite: one library module, :oplite, whose AAR
// carries liboplite.so for four ABIs (built from ../extension by cargo-ndk,
// see build-jni.sh) as jniLibs and as a prefab module. See README.md.
pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
}

dependencyResolutionManagement {
    repositoriesMode.set(RepositoriesMode.FAIL_ON_PROJECT_REPOS)
    repositories {
        google()
        mavenCentral()
    }
}

rootProject.name = "oplite-android"
include(":oplite")
