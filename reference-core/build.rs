// The precompiled `core` of a stable toolchain refers to the unwinder even
// with panic = "abort"; libgcc_eh provides it, as in the core's own builds.
fn main() {
    println!("cargo:rustc-link-arg-cdylib=-lgcc_eh");
}
