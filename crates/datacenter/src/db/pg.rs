//! PostgreSQL backend (the synchronous `postgres` crate, no TLS: the database tier and
//! PostgreSQL are expected on one host or a trusted network). Statements are prepared once
//! per connection and cached by their text.

use super::{Backend, DbKind, Row, Value};
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls, Statement};
use std::collections::HashMap;

pub struct Postgres {
    client: Client,
    cache: HashMap<String, Statement>,
    url_shown: String,
}

/// `?` placeholders to `$1, $2, ...` (the crate's SQL never has `?` inside literals).
pub fn renumber(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        if let Some((cred, host)) = rest.split_once('@') {
            let user = cred.split(':').next().unwrap_or("");
            return format!("{scheme}://{user}@{host}");
        }
    }
    url.to_string()
}

impl Postgres {
    pub fn connect(url: &str) -> Result<Postgres, String> {
        let shown = redact(url);
        let client = Client::connect(url, NoTls).map_err(|e| format!("cannot connect to PostgreSQL at {shown}: {e}"))?;
        Ok(Postgres { client, cache: HashMap::new(), url_shown: shown })
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, String> {
        if let Some(s) = self.cache.get(sql) {
            return Ok(s.clone());
        }
        let st = self.client.prepare(&renumber(sql)).map_err(|e| format!("{} in: {sql}", err_text(&e)))?;
        self.cache.insert(sql.to_string(), st.clone());
        Ok(st)
    }
}

fn err_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => format!("{}: {}", d.severity(), d.message()),
        None => e.to_string(),
    }
}

fn params(p: &[Value]) -> Vec<Box<dyn ToSql + Sync>> {
    p.iter()
        .map(|v| -> Box<dyn ToSql + Sync> {
            match v {
                Value::Null => Box::new(Option::<i64>::None),
                Value::Int(i) => Box::new(*i),
                Value::Real(f) => Box::new(*f),
                Value::Text(s) => Box::new(s.clone()),
            }
        })
        .collect()
}

fn column(row: &postgres::Row, i: usize) -> Result<Value, String> {
    let ty = row.columns()[i].type_().clone();
    let conv = |e: postgres::Error| format!("column {} ({ty}): {e}", row.columns()[i].name());
    Ok(match ty {
        Type::INT8 => row.try_get::<_, Option<i64>>(i).map_err(conv)?.map(Value::Int),
        Type::INT4 => row.try_get::<_, Option<i32>>(i).map_err(conv)?.map(|x| Value::Int(x as i64)),
        Type::INT2 => row.try_get::<_, Option<i16>>(i).map_err(conv)?.map(|x| Value::Int(x as i64)),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map_err(conv)?.map(Value::Real),
        Type::FLOAT4 => row.try_get::<_, Option<f32>>(i).map_err(conv)?.map(|x| Value::Real(x as f64)),
        Type::BOOL => row.try_get::<_, Option<bool>>(i).map_err(conv)?.map(|x| Value::Int(x as i64)),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => row.try_get::<_, Option<String>>(i).map_err(conv)?.map(Value::Text),
        other => return Err(format!("column {} has type {other}; cast it to BIGINT, DOUBLE PRECISION or TEXT", row.columns()[i].name())),
    }
    .unwrap_or(Value::Null))
}

impl Backend for Postgres {
    fn kind(&self) -> DbKind {
        DbKind::Postgres
    }

    fn query(&mut self, sql: &str, p: &[Value]) -> Result<Vec<Row>, String> {
        let st = self.statement(sql)?;
        let boxed = params(p);
        let refs: Vec<&(dyn ToSql + Sync)> = boxed.iter().map(|b| b.as_ref()).collect();
        let rows = self.client.query(&st, &refs).map_err(|e| format!("{} in: {sql}", err_text(&e)))?;
        rows.iter().map(|r| (0..r.len()).map(|i| column(r, i)).collect()).collect()
    }

    fn exec(&mut self, sql: &str, p: &[Value]) -> Result<u64, String> {
        let st = self.statement(sql)?;
        let boxed = params(p);
        let refs: Vec<&(dyn ToSql + Sync)> = boxed.iter().map(|b| b.as_ref()).collect();
        self.client.execute(&st, &refs).map_err(|e| format!("{} in: {sql}", err_text(&e)))
    }

    fn batch(&mut self, sql: &str) -> Result<(), String> {
        // DDL invalidates cached plans of the tables it touches.
        if !sql.trim_start().to_ascii_uppercase().starts_with("BEGIN")
            && !matches!(sql.trim().to_ascii_uppercase().as_str(), "COMMIT" | "ROLLBACK")
        {
            self.cache.clear();
        }
        self.client.batch_execute(sql).map_err(|e| err_text(&e))
    }

    fn begin(&mut self, _write: bool) -> Result<(), String> {
        self.batch("BEGIN")
    }

    fn commit(&mut self) -> Result<(), String> {
        self.batch("COMMIT")
    }

    fn rollback(&mut self) -> Result<(), String> {
        self.batch("ROLLBACK")
    }

    fn describe(&self) -> String {
        format!("postgres {}", self.url_shown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_redaction() {
        assert_eq!(renumber("SELECT a FROM t WHERE b = ? AND c LIKE ?"), "SELECT a FROM t WHERE b = $1 AND c LIKE $2");
        assert_eq!(redact("postgres://u:secret@h:5432/db"), "postgres://u@h:5432/db");
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    }

    #[test]
    fn unreachable_server_is_a_clear_error() {
        // Port 1 on loopback: nothing listens there.
        let e = Postgres::connect("postgres://nobody:pw@127.0.0.1:1/none").err().unwrap();
        assert!(e.contains("cannot connect to PostgreSQL at postgres://nobody@127.0.0.1:1/none"), "{e}");
        assert!(!e.contains("pw@"), "{e}");
    }
}
