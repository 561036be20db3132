#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| oplite_fuzz::schema(data));
