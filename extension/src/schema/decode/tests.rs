//! The decoder against SQLite's own `json_extract` and `oplite_undeclared`
//! (`json_remove` for JSON5 rows, which `oplite_undeclared` cannot read):
//! hand-picked rows, then generated ones (plain, spaced, escaped, JSON5,
//! broken), every key compared by type and exact value.

use super::*;
use rusqlite::types::Value;

#[test]
fn plain_rows_take_the_fast_path() {
    let mut d = RowDecoder::default();
    let keys = br#"["a","b","c","d","e","f"]"#;
    let row = br#"{"a":1,"b":-2.5e1,"c":"x y","x":[1, 2],"d":{"k": [true, null]},"e":false,"a":7,"z":null}"#;
    let got: Vec<Option<Raw>> = (0..=6).map(|i| d.field(keys, row, i).unwrap().map(Raw::from_ref)).collect();
    assert_eq!(
        got,
        vec![
            Some(Raw::Integer(1)),
            Some(Raw::Real(-25.0)),
            Some(Raw::Text(b"x y".to_vec())),
            Some(Raw::Text(br#"{"k":[true,null]}"#.to_vec())),
            Some(Raw::Integer(0)),
            Some(Raw::Null),
            Some(Raw::Text(br#"{"x":[1, 2],"z":null}"#.to_vec())),
        ]
    );
    assert!(d.field(keys, row, 7).is_err());
    assert!(d.field(b"not keys", row, 0).is_err());
}

#[test]
fn anything_unusual_is_left_to_sqlite() {
    let mut d = RowDecoder::default();
    let keys = br#"["a"]"#;
    for row in [
        r#"{a:1}"#,
        r#"{"a":01}"#,
        r#"{"a":1.}"#,
        r#"{"a":.5}"#,
        r#"{"a":+1}"#,
        r#"{"a":0x10}"#,
        r#"{"a":"\u0000"}"#,
        r#"{"\u0061":1}"#,
        r#"{"a":[1,]}"#,
        r#"{"a":1,}"#,
        r#"{"a":tru}"#,
        r#"{"a":"tab	in string"}"#,
        r#"[1]"#,
        r#"{"a":1} x"#,
        r#""#,
        r#"{"a":"unterminated}"#,
    ] {
        assert_eq!(d.field(keys, row.as_bytes(), 0).unwrap(), None, "{row}");
    }
}

/// A small deterministic generator (xorshift), so failures replay.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }

    fn ws(&mut self) -> &'static str {
        if self.below(4) == 0 {
            [" ", "\n ", "\t", "  "][self.below(4) as usize]
        } else {
            ""
        }
    }

    fn number(&mut self) -> String {
        match self.below(8) {
            0 => format!("{}", self.next() as i64),
            1 => format!("{}", self.below(1000) as i64 - 500),
            2 => format!("{}.{}", self.below(100000), self.below(1000)),
            3 => format!("{}", f64::from_bits(self.next() >> 2)),
            4 => format!("{:e}", (self.next() as f64) / (self.below(1 << 40) + 1) as f64),
            5 => format!("{}{}", self.below(10) + 1, "0".repeat(self.below(25) as usize)),
            6 => format!("-0.{:017}", self.next() % 100_000_000_000_000_000),
            _ => self.pick(&["0", "-0", "1e400", "-1E-400", "2.5e+3", "1.0", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-0.0"]).into(),
        }
    }

    fn string(&mut self) -> String {
        match self.below(6) {
            0 => r#""with \"escapes\" \\ \n \u00e9 \ud83d\ude00""#.into(),
            1 => "\"h\u{e9}llo w\u{f6}rld\"".into(),
            2 => r#""\u0000""#.into(),
            3 => r#""\ud800""#.into(),
            _ => format!("\"s{}\"", self.below(1000)),
        }
    }

    fn value(&mut self, depth: u32) -> String {
        match self.below(if depth > 2 { 5 } else { 8 }) {
            0 | 1 => self.number(),
            2 | 3 => self.string(),
            4 => self.pick(&["true", "false", "null"]).into(),
            5 => {
                let n = self.below(4);
                let items: Vec<String> = (0..n).map(|_| format!("{}{}{}", self.ws(), self.value(depth + 1), self.ws())).collect();
                format!("[{}]", items.join(","))
            }
            _ => {
                let n = self.below(4);
                let members: Vec<String> =
                    (0..n).map(|i| format!("{}\"m{i}\"{}:{}{}", self.ws(), self.ws(), self.ws(), self.value(depth + 1))).collect();
                format!("{{{}}}", members.join(","))
            }
        }
    }

    fn row(&mut self, keys: &[&str]) -> String {
        let n = self.below(8);
        let mut members = Vec::new();
        for _ in 0..n {
            let key = match self.below(10) {
                0 => "extra".to_owned(),
                1 => r#"\u0061"#.to_owned(),
                2 => "o\u{f1}e".to_owned(),
                _ => keys[self.below(keys.len() as u64) as usize].to_owned(),
            };
            let (w1, w2, w3, value) = (self.ws(), self.ws(), self.ws(), self.value(0));
            members.push(format!("{w1}\"{key}\"{w2}:{w3}{value}"));
        }
        let mut row = format!("{}{{{}}}{}", self.ws(), members.join(","), self.ws());
        match self.below(40) {
            0 => row = row.replacen('"', "", 2),
            1 => row.push('x'),
            2 => row = row.replacen("}", ",}", 1),
            3 => row = format!("[{row}]"),
            4 => row = "{\"a\":0x1F, \"b\":.5, \"c\":'single'}".into(),
            _ => {}
        }
        row
    }
}

/// One value as (type, exact text), so reals compare by their bits.
fn typed(v: std::result::Result<Raw, String>) -> String {
    match v {
        Ok(Raw::Real(r)) => format!("real {:016x}", r.to_bits()),
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error {}", e.contains("malformed JSON")),
    }
}

#[cfg(feature = "bundled")]
#[test]
fn oplite_field_and_oplite_row_agree_with_json_extract_and_oplite_undeclared() {
    let db = Connection::open_in_memory().unwrap();
    crate::schema::register(&db).unwrap();
    let keys = ["a", "b", "o\u{f1}e", "a.b", "n"];
    let keys_json = serde_json::to_string(&keys).unwrap();
    let mut ours = db.prepare("SELECT oplite_field(?1, ?2, ?3)").unwrap();
    let row_sql: Vec<String> = (0..=keys.len()).map(|i| format!("d.v{i}")).collect();
    let mut ours_row = db.prepare(&format!("SELECT {} FROM oplite_row(?1, ?2) AS d", row_sql.join(", "))).unwrap();
    let mut theirs = db.prepare("SELECT json_extract(?1, ?2)").unwrap();
    let mut undeclared = db
        .prepare(&format!("SELECT oplite_undeclared(?1, {})", keys.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", ")))
        .unwrap();
    // Rows oplite_undeclared cannot read (JSON5) get json_remove's answer.
    let paths: Vec<String> = keys.iter().map(|k| format!("'$.\"{k}\"'")).collect();
    let mut removed = db.prepare(&format!("SELECT NULLIF(json_remove(?1, {}), '{{}}')", paths.join(", "))).unwrap();
    let mut gen = Gen(0x9e37_79b9_7f4a_7c15);
    let mut plain = 0;
    for round in 0..20_000 {
        let row = gen.row(&keys);
        // Ask in a shuffled order: the cache must not depend on it.
        let start = gen.below(keys.len() as u64 + 1) as usize;
        let mut wants = vec![String::new(); keys.len() + 1];
        for step in 0..=keys.len() {
            let i = (start + step) % (keys.len() + 1);
            let got = ours.query_row(rusqlite::params![row, keys_json, i as i64], |r| Ok(Raw::from_ref(r.get_ref(0)?))).map_err(|e| e.to_string());
            let want = match keys.get(i) {
                Some(key) => theirs.query_row(rusqlite::params![row, format!("$.\"{key}\"")], |r| Ok(Raw::from_ref(r.get_ref(0)?))),
                None => undeclared
                    .query_row([&row], |r| Ok(Raw::from_ref(r.get_ref(0)?)))
                    .or_else(|_| removed.query_row([&row], |r| Ok(Raw::from_ref(r.get_ref(0)?)))),
            }
            .map_err(|e| e.to_string());
            wants[i] = typed(want.clone());
            assert_eq!(typed(got), typed(want), "round {round}, key {i}, row {row}");
        }
        // oplite_row computes the whole row: it fails if any column does.
        let from_row = ours_row
            .query_row(rusqlite::params![row, keys_json], |r| {
                (0..=keys.len()).map(|i| Ok(typed(Ok(Raw::from_ref(r.get_ref(i)?))))).collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(|e| e.to_string());
        match wants.iter().find(|w| w.starts_with("error")) {
            Some(_) => assert!(from_row.is_err(), "oplite_row: round {round}, row {row}: {from_row:?}"),
            None => assert_eq!(from_row, Ok(wants), "oplite_row: round {round}, row {row}"),
        }
        let mut d = RowDecoder::default();
        if d.field(keys_json.as_bytes(), row.as_bytes(), 0).unwrap().is_some() {
            plain += 1;
        }
    }
    assert!(plain > 5_000, "only {plain} rows took the fast path");
}

#[cfg(feature = "bundled")]
#[test]
fn non_text_data_and_wrong_arguments() {
    let db = Connection::open_in_memory().unwrap();
    crate::schema::register(&db).unwrap();
    let one = |sql: &str| db.query_row(sql, [], |r| r.get::<_, Value>(0)).map_err(|e| e.to_string());
    assert_eq!(one(r#"SELECT oplite_field(NULL, '["a"]', 0)"#), Ok(Value::Null));
    assert_eq!(one(r#"SELECT oplite_field(12, '["a"]', 0)"#), one("SELECT json_extract(12, '$.a')"));
    assert_eq!(one(r#"SELECT oplite_field(12, '["a"]', 1)"#), Ok(Value::Null));
    assert!(one(r#"SELECT oplite_field('{}', '["a"]', 2)"#).unwrap_err().contains("column 2"));
    assert!(one(r#"SELECT oplite_field('{}', 'a', 0)"#).unwrap_err().contains("JSON array"));
    assert!(one(r#"SELECT oplite_field('{}', '["a"]', -1)"#).is_err());
    assert!(one(r#"SELECT oplite_field('{', '["a"]', 0)"#).unwrap_err().contains("malformed JSON"));
}

#[test]
fn a_huge_row_is_not_kept_once_rows_are_small_again() {
    let mut d = RowDecoder::default();
    let keys = br#"["a"]"#;
    let huge = format!(r#"{{"a":"{}","b":"{}"}}"#, "x".repeat(3 << 20), "y".repeat(3 << 20));
    assert_eq!(d.field(keys, huge.as_bytes(), 0).unwrap().map(|v| v.as_str().unwrap().len()), Some(3 << 20));
    assert!(d.data.capacity() > LARGE_BUFFER && d.undeclared.capacity() > LARGE_BUFFER);
    assert_eq!(d.field(keys, br#"{"a":1}"#, 0).unwrap(), Some(ValueRef::Integer(1)));
    assert!(d.data.capacity() < LARGE_BUFFER && d.undeclared.capacity() < LARGE_BUFFER);
}

#[cfg(feature = "bundled")]
#[test]
fn oplite_row_joins_binds_and_fails_like_a_function() {
    let db = Connection::open_in_memory().unwrap();
    crate::schema::register(&db).unwrap();
    let all = |sql: &str| -> std::result::Result<Vec<Vec<Value>>, String> {
        let mut stmt = db.prepare(sql).map_err(|e| e.to_string())?;
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| e.to_string())?;
        rows.collect::<rusqlite::Result<_>>().map_err(|e| e.to_string())
    };
    let (int, text) = (Value::Integer, |s: &str| Value::Text(s.to_owned()));
    // Two cursors in one statement keep their own rows.
    assert_eq!(
        all(r#"SELECT a.v0, b.v0, b.v1 FROM oplite_row('{"x":1}', '["x"]') a, oplite_row('{"x":2,"y":3}', '["x"]') b"#),
        Ok(vec![vec![int(1), int(2), text(r#"{"y":3}"#)]])
    );
    // Correlated with a table, whichever comes first in FROM.
    db.execute_batch(r#"CREATE TABLE t(id, data); INSERT INTO t VALUES (1, '{"x":"a"}'), (2, '{x: "b"}'), (3, NULL), (4, 7);"#).unwrap();
    let want = vec![
        vec![int(1), text("a"), Value::Null],
        vec![int(2), text("b"), Value::Null],
        vec![int(3), Value::Null, Value::Null],
        vec![int(4), Value::Null, Value::Null],
    ];
    assert_eq!(all(r#"SELECT t.id, d.v0, d.v1 FROM t, oplite_row(t.data, '["x"]') d ORDER BY t.id"#), Ok(want.clone()));
    assert_eq!(all(r#"SELECT t.id, d.v0, d.v1 FROM oplite_row(t.data, '["x"]') d, t ORDER BY t.id"#), Ok(want));
    // Bad input fails the statement with the reason.
    assert!(all(r#"SELECT d.v0 FROM oplite_row('{', '["x"]') d"#).unwrap_err().contains("malformed JSON"));
    assert!(all(r#"SELECT d.v0 FROM oplite_row('{}', 'x') d"#).unwrap_err().contains("JSON array"));
    assert!(all(r#"SELECT d.v0 FROM oplite_row('{}') d"#).unwrap_err().contains("keys must be"));
    assert!(all("SELECT v0 FROM oplite_row").unwrap_err().contains("keys must be"));
}
