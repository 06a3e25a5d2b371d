//! The database tier's storage: one SQL dialect-neutral interface over SQLite (embedded,
//! the default) and PostgreSQL (`--db-url postgres://...`), the TPC-W schema, and the
//! named queries and transactions the application tier asks for ([`procs`]).
//!
//! SQL in this crate is written once with `?` placeholders, integer columns as BIGINT,
//! money as DOUBLE PRECISION dollars and dates as BIGINT Unix seconds, so the same text
//! runs on both engines (the PostgreSQL backend renumbers `?` to `$1, $2, ...`).

pub mod pg;
pub mod procs;
pub mod sqlite;

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A column value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Value {
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Real(f) => Some(*f as i64),
            Value::Text(s) => s.parse().ok(),
            Value::Null => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Real(f) => Some(*f),
            Value::Text(s) => s.parse().ok(),
            Value::Null => None,
        }
    }
    /// Text form ("" for NULL).
    pub fn text(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Real(f) => f.to_string(),
            Value::Text(s) => s.clone(),
            Value::Null => String::new(),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(v as i64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Real(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}

/// A result row.
pub type Row = Vec<Value>;

/// Which engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    Sqlite,
    Postgres,
}

/// A connection to the bookstore database. Errors are messages ready to show.
pub trait Backend: Send {
    fn kind(&self) -> DbKind;
    /// Runs a query with `?` parameters and returns all rows.
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, String>;
    /// Runs a statement; returns rows affected.
    fn exec(&mut self, sql: &str, params: &[Value]) -> Result<u64, String>;
    /// Runs one or more statements without parameters (DDL).
    fn batch(&mut self, sql: &str) -> Result<(), String>;
    /// Starts a transaction; `write` takes the write lock at once (SQLite BEGIN IMMEDIATE).
    fn begin(&mut self, write: bool) -> Result<(), String>;
    fn commit(&mut self) -> Result<(), String>;
    fn rollback(&mut self) -> Result<(), String>;
    /// A short description for banners ("sqlite bookstore.sqlite", "postgres host/db").
    fn describe(&self) -> String;
}

/// Where the database is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbSpec {
    /// An SQLite file (created if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (`postgres://user:pass@host:port/db`).
    Postgres(String),
}

/// Default SQLite file.
pub const DEFAULT_SQLITE: &str = "interlab-bookstore.sqlite";

impl DbSpec {
    /// From the `--db FILE` and `--db-url URL` options (URL: `postgres://`, `postgresql://`
    /// or `sqlite:PATH`).
    pub fn from_options(db: Option<PathBuf>, url: Option<&str>) -> Result<DbSpec, String> {
        match (db, url) {
            (Some(_), Some(_)) => Err("give either --db FILE (SQLite) or --db-url URL, not both".into()),
            (Some(p), None) => Ok(DbSpec::Sqlite(p)),
            (None, None) => Ok(DbSpec::Sqlite(PathBuf::from(DEFAULT_SQLITE))),
            (None, Some(u)) => {
                if u.starts_with("postgres://") || u.starts_with("postgresql://") {
                    Ok(DbSpec::Postgres(u.to_string()))
                } else if let Some(p) = u.strip_prefix("sqlite:") {
                    if p.is_empty() {
                        return Err("--db-url sqlite: needs a file path, e.g. sqlite:bookstore.sqlite".into());
                    }
                    Ok(DbSpec::Sqlite(PathBuf::from(p)))
                } else {
                    Err(format!("--db-url '{u}': expected postgres://USER@HOST:PORT/DB or sqlite:PATH"))
                }
            }
        }
    }

    /// Opens a new connection.
    pub fn open(&self) -> Result<Box<dyn Backend>, String> {
        match self {
            DbSpec::Sqlite(p) => Ok(Box::new(sqlite::Sqlite::open(p)?)),
            DbSpec::Postgres(u) => Ok(Box::new(pg::Postgres::connect(u)?)),
        }
    }

    /// As command-line options for a child process.
    pub fn to_args(&self) -> Vec<String> {
        match self {
            DbSpec::Sqlite(p) => vec!["--db".into(), p.display().to_string()],
            DbSpec::Postgres(u) => vec!["--db-url".into(), u.clone()],
        }
    }
}

/// Runs `f` inside a transaction: commit on Ok, rollback on Err (the error is returned;
/// a failed rollback is appended to it).
pub fn transaction<T>(db: &mut dyn Backend, write: bool, f: impl FnOnce(&mut dyn Backend) -> Result<T, String>) -> Result<T, String> {
    db.begin(write)?;
    match f(db) {
        Ok(v) => match db.commit() {
            Ok(()) => Ok(v),
            Err(e) => {
                let _ = db.rollback();
                Err(format!("commit failed: {e}"))
            }
        },
        Err(e) => match db.rollback() {
            Ok(()) => Err(e),
            Err(r) => Err(format!("{e}; rollback also failed: {r}")),
        },
    }
}

/// The schema with dialect tokens: {ID} auto-numbered primary key, {INT}, {REAL}, {NOCASE}.
const SCHEMA: &str = "
CREATE TABLE country (co_id {INT} PRIMARY KEY, co_name TEXT NOT NULL, co_exchange {REAL} NOT NULL, co_currency TEXT NOT NULL);
CREATE TABLE author (a_id {INT} PRIMARY KEY, a_fname TEXT, a_lname TEXT{NOCASE}, a_mname TEXT, a_dob {INT}, a_bio TEXT);
CREATE TABLE item (i_id {INT} PRIMARY KEY, i_title TEXT{NOCASE}, i_a_id {INT}, i_pub_date {INT}, i_publisher TEXT,
  i_subject TEXT, i_desc TEXT, i_related1 {INT}, i_related2 {INT}, i_related3 {INT}, i_related4 {INT}, i_related5 {INT},
  i_thumbnail TEXT, i_image TEXT, i_srp {REAL}, i_cost {REAL}, i_avail {INT}, i_stock {INT}, i_isbn TEXT, i_page {INT},
  i_backing TEXT, i_dimensions TEXT);
CREATE TABLE address (addr_id {ID}, addr_street1 TEXT, addr_street2 TEXT, addr_city TEXT, addr_state TEXT, addr_zip TEXT,
  addr_co_id {INT});
CREATE TABLE customer (c_id {ID}, c_uname TEXT NOT NULL UNIQUE, c_passwd TEXT, c_fname TEXT, c_lname TEXT, c_addr_id {INT},
  c_phone TEXT, c_email TEXT, c_since {INT}, c_last_login {INT}, c_login {INT}, c_expiration {INT}, c_discount {REAL},
  c_balance {REAL}, c_ytd_pmt {REAL}, c_birthdate {INT}, c_data TEXT);
CREATE TABLE orders (o_id {ID}, o_c_id {INT}, o_date {INT}, o_sub_total {REAL}, o_tax {REAL}, o_total {REAL},
  o_ship_type TEXT, o_ship_date {INT}, o_bill_addr_id {INT}, o_ship_addr_id {INT}, o_status TEXT);
CREATE TABLE order_line (ol_id {INT} NOT NULL, ol_o_id {INT} NOT NULL, ol_i_id {INT}, ol_qty {INT}, ol_discount {REAL},
  ol_comments TEXT, PRIMARY KEY (ol_o_id, ol_id));
CREATE TABLE cc_xacts (cx_o_id {INT} PRIMARY KEY, cx_type TEXT, cx_num TEXT, cx_name TEXT, cx_expire {INT}, cx_auth_id TEXT,
  cx_xact_amt {REAL}, cx_xact_date {INT}, cx_co_id {INT});
CREATE TABLE shopping_cart (sc_id {ID}, sc_time {INT});
CREATE TABLE shopping_cart_line (scl_sc_id {INT} NOT NULL, scl_i_id {INT} NOT NULL, scl_qty {INT},
  PRIMARY KEY (scl_sc_id, scl_i_id));
CREATE TABLE dc_meta (k TEXT PRIMARY KEY, v TEXT);
";

/// Indexes created after the bulk load ({PATTERN}: PostgreSQL's operator class for
/// prefix LIKE; SQLite uses the NOCASE columns).
const INDEXES: &str = "
CREATE INDEX author_lname ON author (a_lname{PATTERN});
CREATE INDEX item_title ON item (i_title{PATTERN});
CREATE INDEX item_subject_date ON item (i_subject, i_pub_date);
CREATE INDEX item_author ON item (i_a_id);
CREATE INDEX order_line_item ON order_line (ol_i_id);
CREATE INDEX orders_customer ON orders (o_c_id);
CREATE INDEX address_zip ON address (addr_zip);
";

/// Tables in drop order.
pub const TABLES: [&str; 11] = [
    "dc_meta",
    "shopping_cart_line",
    "shopping_cart",
    "cc_xacts",
    "order_line",
    "orders",
    "customer",
    "address",
    "item",
    "author",
    "country",
];

fn dialect(sql: &str, kind: DbKind) -> String {
    let (id, int, real, nocase, pattern) = match kind {
        DbKind::Sqlite => ("INTEGER PRIMARY KEY", "BIGINT", "DOUBLE PRECISION", " COLLATE NOCASE", ""),
        DbKind::Postgres => ("BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "BIGINT", "DOUBLE PRECISION", "", " text_pattern_ops"),
    };
    sql.replace("{ID}", id)
        .replace("{INT}", int)
        .replace("{REAL}", real)
        .replace("{NOCASE}", nocase)
        .replace("{PATTERN}", pattern)
}

/// Drops the bookstore tables (if present) and creates them empty.
pub fn create_schema(db: &mut dyn Backend) -> Result<(), String> {
    for t in TABLES {
        db.batch(&format!("DROP TABLE IF EXISTS {t}"))?;
    }
    db.batch(&dialect(SCHEMA, db.kind()))
}

/// Creates the secondary indexes and refreshes planner statistics.
pub fn create_indexes(db: &mut dyn Backend) -> Result<(), String> {
    db.batch(&dialect(INDEXES, db.kind()))?;
    db.batch("ANALYZE")
}

/// What `dc_meta` records about a populated database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub items: u64,
    pub ebs: u64,
    pub customers: u64,
    pub seed: u64,
    pub schema: u64,
}

/// Schema version stored in `dc_meta`.
pub const SCHEMA_VERSION: u64 = 1;

/// Reads `dc_meta`; None when the database is empty or was never fully populated.
pub fn read_meta(db: &mut dyn Backend) -> Option<Meta> {
    let rows = db.query("SELECT k, v FROM dc_meta", &[]).ok()?;
    let get = |k: &str| rows.iter().find(|r| r.first().map(|x| x.text()) == Some(k.to_string())).and_then(|r| r.get(1)).and_then(|v| v.text().parse::<u64>().ok());
    if get("complete")? != 1 {
        return None;
    }
    Some(Meta { items: get("items")?, ebs: get("ebs")?, customers: get("customers")?, seed: get("seed")?, schema: get("schema")? })
}

/// Writes `dc_meta` (the last step of population: its `complete` row marks success).
pub fn write_meta(db: &mut dyn Backend, m: &Meta) -> Result<(), String> {
    for (k, v) in [("items", m.items), ("ebs", m.ebs), ("customers", m.customers), ("seed", m.seed), ("schema", m.schema), ("complete", 1)] {
        db.exec("INSERT INTO dc_meta (k, v) VALUES (?, ?)", &[k.into(), v.to_string().into()])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_options() {
        assert_eq!(DbSpec::from_options(None, None).unwrap(), DbSpec::Sqlite(DEFAULT_SQLITE.into()));
        assert_eq!(DbSpec::from_options(None, Some("sqlite:x.db")).unwrap(), DbSpec::Sqlite("x.db".into()));
        assert!(matches!(DbSpec::from_options(None, Some("postgres://u@h/d")).unwrap(), DbSpec::Postgres(_)));
        assert!(DbSpec::from_options(None, Some("mysql://x")).unwrap_err().contains("expected postgres://"));
        assert!(DbSpec::from_options(Some("a".into()), Some("sqlite:b")).is_err());
    }

    #[test]
    fn value_json_is_plain() {
        let row: Row = vec![Value::Int(3), Value::Real(1.5), Value::Text("a".into()), Value::Null];
        let s = serde_json::to_string(&row).unwrap();
        assert_eq!(s, r#"[3,1.5,"a",null]"#);
        let back: Row = serde_json::from_str(&s).unwrap();
        assert_eq!(back, row);
    }
}
