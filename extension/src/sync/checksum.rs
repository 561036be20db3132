//! Bucket checksums: unsigned 32-bit sums with wrapping arithmetic.
//!
//! The service sends checksums as u32, as negative i32 (the same bits) or as
//! an integral float; all three decode to the same [`Checksum`]. SQLite has
//! no unsigned type, so the stored form is the u32 value in an INTEGER.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};

/// A bucket or op checksum. Addition and subtraction wrap at 2^32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Checksum(pub u32);

impl Checksum {
    /// The checksum as SQLite stores it (a non-negative integer).
    pub fn as_i64(self) -> i64 {
        i64::from(self.0)
    }

    /// Reads a stored value: any integer, reduced modulo 2^32.
    pub fn from_i64(value: i64) -> Self {
        Checksum(value as u32)
    }
}

impl Add for Checksum {
    type Output = Checksum;
    fn add(self, rhs: Checksum) -> Checksum {
        Checksum(self.0.wrapping_add(rhs.0))
    }
}

impl AddAssign for Checksum {
    fn add_assign(&mut self, rhs: Checksum) {
        self.0 = self.0.wrapping_add(rhs.0);
    }
}

impl Sub for Checksum {
    type Output = Checksum;
    fn sub(self, rhs: Checksum) -> Checksum {
        Checksum(self.0.wrapping_sub(rhs.0))
    }
}

impl fmt::Display for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

struct ChecksumVisitor;

impl Visitor<'_> for ChecksumVisitor {
    type Value = Checksum;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a checksum (u32, i32 or an integral number)")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Checksum, E> {
        u32::try_from(v)
            .map(Checksum)
            .map_err(|_| E::custom(format!("checksum {v} does not fit in 32 bits")))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Checksum, E> {
        if (i64::from(i32::MIN)..=i64::from(u32::MAX)).contains(&v) {
            Ok(Checksum(v as u32))
        } else {
            Err(E::custom(format!("checksum {v} does not fit in 32 bits")))
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Checksum, E> {
        if v.fract() == 0.0 && v >= f64::from(i32::MIN) && v <= f64::from(u32::MAX) {
            self.visit_i64(v as i64)
        } else {
            Err(E::custom(format!("checksum {v} is not an integral 32-bit number")))
        }
    }
}

impl<'de> Deserialize<'de> for Checksum {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ChecksumVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Checksum, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn accepts_u32_negative_i32_and_integral_floats() {
        assert_eq!(parse("4294967295").unwrap(), Checksum(u32::MAX));
        assert_eq!(parse("-1").unwrap(), Checksum(u32::MAX));
        assert_eq!(parse("-2147483648").unwrap(), Checksum(0x8000_0000));
        assert_eq!(parse("3.0").unwrap(), Checksum(3));
        assert_eq!(parse("-1.0").unwrap(), Checksum(u32::MAX));
        assert!(parse("4294967296").is_err());
        assert!(parse("-2147483649").is_err());
        assert!(parse("1.5").is_err());
        assert!(parse("\"1\"").is_err());
    }

    #[test]
    fn arithmetic_wraps() {
        assert_eq!(Checksum(u32::MAX) + Checksum(2), Checksum(1));
        assert_eq!(Checksum(1) - Checksum(2), Checksum(u32::MAX));
        let mut c = Checksum(0xFFFF_FFF0);
        c += Checksum(0x20);
        assert_eq!(c, Checksum(0x10));
    }

    #[test]
    fn displays_as_hex() {
        assert_eq!(Checksum(7).to_string(), "0x00000007");
    }

    /// docs/protocol.md's worked example, stored by oplite's own
    /// bookkeeping (`store_data_line`, as a sync iteration calls it): PUTs
    /// with checksums 1, 2 (the same row as the first) and 3 leave add = 1,
    /// op = 5; a REMOVE of the second row with checksum 0xFFFFFFFF then
    /// leaves add = 3, op = 2 (total 5), and only the second PUT stored.
    /// The ops go in as one line, one line per op, and split after the
    /// PUTs, so a superseded op is found in the line's pending batch and in
    /// ps_oplog, through the iteration's key set and without it.
    #[cfg(feature = "bundled")]
    #[test]
    fn worked_example_from_the_spec() {
        use crate::sync::data_line::{store_data_line, KnownKeys};
        use crate::sync::line::DataLine;
        use rusqlite::Connection;

        const OPS: [&str; 4] = [
            r#"{"op_id": "1", "op": "PUT", "object_type": "t", "object_id": "A", "checksum": 1, "data": "{}"}"#,
            r#"{"op_id": "2", "op": "PUT", "object_type": "t", "object_id": "A", "checksum": 2, "data": "{}"}"#,
            r#"{"op_id": "3", "op": "PUT", "object_type": "t", "object_id": "B", "checksum": 3, "data": "{}"}"#,
            r#"{"op_id": "4", "op": "REMOVE", "object_type": "t", "object_id": "B", "checksum": 4294967295}"#,
        ];
        fn sums(db: &Connection) -> (Checksum, Checksum) {
            db.query_row("SELECT add_checksum, op_checksum FROM ps_buckets WHERE name = 'b'", [], |r| {
                Ok((Checksum::from_i64(r.get(0)?), Checksum::from_i64(r.get(1)?)))
            })
            .unwrap()
        }
        fn stored_ops(db: &Connection) -> Vec<(i64, Checksum)> {
            let mut stmt = db.prepare("SELECT op_id, hash FROM ps_oplog ORDER BY op_id").unwrap();
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, Checksum::from_i64(r.get(1)?)))).unwrap();
            rows.map(Result::unwrap).collect()
        }

        // Line boundaries (ops per line), and whether each line starts a
        // new sync iteration (a fresh key set: every PUT looks up).
        let splits: [(&[usize], bool); 5] =
            [(&[4], false), (&[1, 1, 1, 1], false), (&[1, 1, 1, 1], true), (&[3, 1], false), (&[2, 2], true)];
        for (lines, new_iteration) in splits {
            let case = format!("ops per line {lines:?}, a new iteration per line: {new_iteration}");
            let db = Connection::open_in_memory().unwrap();
            crate::migrations::migrate_to(&db, crate::migrations::LATEST_VERSION).unwrap();
            let mut known = KnownKeys::default();
            let mut done = 0;
            for &count in lines {
                if new_iteration {
                    known = KnownKeys::default();
                }
                let text = format!(r#"{{"bucket": "b", "data": [{}]}}"#, OPS[done..done + count].join(", "));
                let line: DataLine<'_> = serde_json::from_str(&text).unwrap();
                store_data_line(&db, &line, text.len(), &mut known).unwrap();
                done += count;
                if done == 3 {
                    assert_eq!(sums(&db), (Checksum(1), Checksum(5)), "after the PUTs, {case}");
                    assert_eq!(stored_ops(&db), vec![(2, Checksum(2)), (3, Checksum(3))], "{case}");
                }
            }
            let (add, op) = sums(&db);
            assert_eq!((add, op), (Checksum(3), Checksum(2)), "after the REMOVE, {case}");
            assert_eq!(add + op, Checksum(5), "{case}");
            assert_eq!(stored_ops(&db), vec![(2, Checksum(2))], "{case}");
        }
    }
}
