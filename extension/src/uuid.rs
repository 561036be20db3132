//! Random (version 4) UUIDs, for the client id and `uuid()`. Random bytes
//! come from `sqlite3_randomness`, which SQLite seeds from its VFS; that
//! works the same natively and in the browser without another source of
//! entropy.

use crate::sqlite::random_bytes;

/// A random (version 4) UUID in lower-case hyphenated form.
pub fn random_uuid() -> String {
    let mut bytes = [0u8; 16];
    random_bytes(&mut bytes);
    format_uuid_v4(bytes)
}

/// Sets the version and variant bits of `bytes` and formats them.
fn format_uuid_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let mut out = String::with_capacity(36);
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_has_version_and_variant_bits() {
        let s = format_uuid_v4([0xff; 16]);
        assert_eq!(s, "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let s = format_uuid_v4([0; 16]);
        assert_eq!(s, "00000000-0000-4000-8000-000000000000");
    }
}
