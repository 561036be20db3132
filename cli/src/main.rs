//! `oplite`: the command-line host for the oplite sync engine.
//!
//! For now it has one command, `oplite demo [--db FILE]`, which creates a
//! database file, loads oplite into it, initialises the internal schema and
//! prints what it made. The sync commands grow from here.

use std::process::ExitCode;

use rusqlite::Connection;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") => demo(&args[1..]),
        Some("--version") => {
            println!("oplite {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        _ => {
            eprintln!("usage: oplite demo [--db FILE]");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("oplite: {message}");
            ExitCode::FAILURE
        }
    }
}

fn demo(args: &[String]) -> Result<(), String> {
    let path = match args {
        [] => "oplite-demo.db".to_owned(),
        [flag, path] if flag == "--db" => path.clone(),
        _ => return Err("usage: oplite demo [--db FILE]".into()),
    };
    let db = Connection::open(&path).map_err(|e| format!("opening {path}: {e}"))?;
    oplite::register(&db).map_err(|e| e.to_string())?;
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").map_err(|e| format!("powersync_init: {e}"))?;

    let version: String = db.query_row("SELECT oplite_version()", [], |r| r.get(0)).map_err(|e| e.to_string())?;
    let schema: i64 = db
        .query_row("SELECT max(id) FROM ps_migration", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    let client: String = db.query_row("SELECT powersync_client_id()", [], |r| r.get(0)).map_err(|e| e.to_string())?;
    println!("{version}");
    println!("database:                {path}");
    println!("internal schema version: {schema}");
    println!("client id:               {client}");
    println!("tables:");
    let mut stmt = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .map_err(|e| e.to_string())?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(|e| e.to_string())?;
    for name in names {
        let name = name.map_err(|e| e.to_string())?;
        let rows: i64 = db
            .query_row(&format!("SELECT count(*) FROM \"{}\"", name.replace('"', "\"\"")), [], |r| r.get(0))
            .map_err(|e| e.to_string())?;
        println!("  {name:<28} {rows:>8} rows");
    }
    Ok(())
}
