//! SQLite backend (rusqlite, bundled SQLite): WAL journal so readers never wait for the
//! writer; write transactions take the lock at BEGIN (IMMEDIATE) and wait up to
//! [`BUSY_TIMEOUT`] for it.

use super::{Backend, DbKind, Row, Value};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a statement waits for another connection's write lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Sqlite {
    conn: Connection,
    path: PathBuf,
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::Real(f) => ToSqlOutput::Borrowed(ValueRef::Real(*f)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        })
    }
}

fn from_ref(v: ValueRef<'_>) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Text(String::from_utf8_lossy(b).into_owned()),
    }
}

impl Sqlite {
    /// Opens (creating if missing) the database file, with a message naming the file on
    /// failure.
    pub fn open(path: &Path) -> Result<Sqlite, String> {
        let what = |e: &dyn std::fmt::Display| {
            format!("cannot open SQLite database {}: {e} (the file must be a bookstore database or absent, in a writable directory)", path.display())
        };
        let conn = Connection::open(path).map_err(|e| what(&e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| what(&e))?;
        // The first statements touch the file: an unwritable place or a non-database file fails here.
        conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)).map_err(|e| what(&e))?;
        conn.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; CREATE TABLE IF NOT EXISTS dc_probe (x INTEGER); DROP TABLE IF EXISTS dc_probe;")
            .map_err(|e| what(&e))?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(Sqlite { conn, path: path.to_path_buf() })
    }

    /// A private in-memory database (tests).
    pub fn memory() -> Result<Sqlite, String> {
        let conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
        Ok(Sqlite { conn, path: PathBuf::from(":memory:") })
    }
}

impl Backend for Sqlite {
    fn kind(&self) -> DbKind {
        DbKind::Sqlite
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, String> {
        let mut st = self.conn.prepare_cached(sql).map_err(|e| format!("{e} in: {sql}"))?;
        let n = st.column_count();
        let mut rows = st.query(rusqlite::params_from_iter(params.iter())).map_err(|e| format!("{e} in: {sql}"))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(|e| format!("{e} in: {sql}"))? {
            let mut row = Vec::with_capacity(n);
            for i in 0..n {
                row.push(from_ref(r.get_ref(i).map_err(|e| e.to_string())?));
            }
            out.push(row);
        }
        Ok(out)
    }

    fn exec(&mut self, sql: &str, params: &[Value]) -> Result<u64, String> {
        let mut st = self.conn.prepare_cached(sql).map_err(|e| format!("{e} in: {sql}"))?;
        st.execute(rusqlite::params_from_iter(params.iter())).map(|n| n as u64).map_err(|e| format!("{e} in: {sql}"))
    }

    fn batch(&mut self, sql: &str) -> Result<(), String> {
        self.conn.execute_batch(sql).map_err(|e| format!("{e}"))
    }

    fn begin(&mut self, write: bool) -> Result<(), String> {
        self.batch(if write { "BEGIN IMMEDIATE" } else { "BEGIN" })
    }

    fn commit(&mut self) -> Result<(), String> {
        self.batch("COMMIT")
    }

    fn rollback(&mut self) -> Result<(), String> {
        if self.conn.is_autocommit() {
            return Ok(());
        }
        self.batch("ROLLBACK")
    }

    fn describe(&self) -> String {
        format!("sqlite {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritable_or_bogus_files_give_clear_errors() {
        let e = Sqlite::open(Path::new("/nonexistent-dir/sub/x.sqlite")).err().unwrap();
        assert!(e.contains("cannot open SQLite database /nonexistent-dir/sub/x.sqlite"), "{e}");
        let dir = std::env::temp_dir().join(format!("interlab-sqlite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk.sqlite");
        std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
        let e = Sqlite::open(&junk).err().unwrap();
        assert!(e.contains("junk.sqlite"), "{e}");
        // A path below a regular file cannot be created.
        let e = Sqlite::open(&junk.join("db.sqlite")).err().unwrap();
        assert!(e.contains("cannot open SQLite database"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn values_round_trip() {
        let mut db = Sqlite::memory().unwrap();
        db.batch("CREATE TABLE t (a BIGINT, b DOUBLE PRECISION, c TEXT)").unwrap();
        db.exec("INSERT INTO t VALUES (?, ?, ?)", &[Value::Int(7), Value::Real(2.5), "x".into()]).unwrap();
        let rows = db.query("SELECT a, b, c, NULL FROM t WHERE a = ?", &[Value::Int(7)]).unwrap();
        assert_eq!(rows, vec![vec![Value::Int(7), Value::Real(2.5), Value::Text("x".into()), Value::Null]]);
        assert!(db.query("SELECT nope FROM t", &[]).unwrap_err().contains("no such column"));
    }
}
