//! The database tier: owns the database connections and executes the named queries and
//! transactions of [`crate::db::procs`] for the application tier, one frame each.
//!
//! Request header: `{"v":1,"op":"item_detail","args":[42]}` (no body).
//! Reply header: `{"v":1,"ok":true,"sets":[[[...row...],...],...],"cpu_ns":N,"wall_ns":N}`
//! or `{"v":1,"ok":false,"kind":"not_found","error":"no item 42","cpu_ns":N,"wall_ns":N}`.
//! One database connection per application-tier connection (a thread each).

use crate::cpu::thread_cpu_ns;
use crate::db::procs::{self, ProcOptions, Sets};
use crate::db::{read_meta, DbSpec, Meta};
use crate::populate::populate;
use crate::tpcw::Scale;
use crate::wire::{read_frame, write_frame, Addr, FrameError, Listener};
use serde::{Deserialize, Serialize};
use serde_json::Value as J;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A request to the database tier.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DbReq {
    pub v: u32,
    pub op: String,
    #[serde(default)]
    pub args: Vec<J>,
}

/// The database tier's reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DbResp {
    pub v: u32,
    pub ok: bool,
    #[serde(default)]
    pub sets: Sets,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Thread CPU time spent on the request, ns.
    #[serde(default)]
    pub cpu_ns: u64,
    /// Wall time from request read to reply ready, ns.
    #[serde(default)]
    pub wall_ns: u64,
}

/// Database tier settings.
#[derive(Debug, Clone)]
pub struct DbTierConfig {
    pub listen: Addr,
    pub db: DbSpec,
    pub opts: ProcOptions,
    /// Application-tier connections served at once.
    pub max_connections: usize,
    pub quiet: bool,
}

/// How to make sure the database holds a bookstore.
#[derive(Debug, Clone, Copy)]
pub struct PopulateRequest {
    /// Scale to populate an empty database with.
    pub scale: Scale,
    pub seed: u64,
    /// Whether the scale was given explicitly (a mismatch with an existing database is then reported).
    pub explicit: bool,
    /// Rebuild even if populated.
    pub force: bool,
}

/// Populates the database if it is empty (or `force`); returns what it holds.
pub fn ensure_populated(spec: &DbSpec, req: PopulateRequest, quiet: bool) -> Result<Meta, String> {
    let mut db = spec.open()?;
    if !req.force {
        if let Some(m) = read_meta(db.as_mut()) {
            if req.explicit && (m.items != req.scale.items || m.ebs != req.scale.ebs) {
                eprintln!(
                    "interlab datacenter: note: {} already holds {} items for {} browsers; using it (run `interlab datacenter populate --force` to rebuild at {} items, {} browsers)",
                    db.describe(),
                    m.items,
                    m.ebs,
                    req.scale.items,
                    req.scale.ebs
                );
            }
            return Ok(m);
        }
    }
    let t0 = Instant::now();
    if !quiet {
        eprintln!(
            "interlab datacenter: populating {} with {} items, {} customers ({} browsers), seed {}",
            db.describe(),
            req.scale.items,
            req.scale.customers(),
            req.scale.ebs,
            req.seed
        );
    }
    let m = populate(db.as_mut(), req.scale, req.seed, &mut |step| {
        if !quiet {
            eprintln!("interlab datacenter:   {step}");
        }
    })?;
    if !quiet {
        eprintln!("interlab datacenter: populated in {:.1} s", t0.elapsed().as_secs_f64());
    }
    Ok(m)
}

/// Executes one request on a connection (also used by tests without sockets).
pub fn execute(db: &mut dyn crate::db::Backend, req: &DbReq, opts: ProcOptions) -> DbResp {
    let t0 = Instant::now();
    let c0 = thread_cpu_ns();
    let r = procs::run(db, &req.op, &req.args, opts);
    let (ok, sets, kind, error) = match r {
        Ok(s) => (true, s, None, None),
        Err(e) => (false, Vec::new(), Some(e.kind.as_str().to_string()), Some(e.msg)),
    };
    DbResp { v: 1, ok, sets, kind, error, cpu_ns: thread_cpu_ns().saturating_sub(c0), wall_ns: t0.elapsed().as_nanos() as u64 }
}

/// Listens and serves until the process ends. `ready` receives the bound address once the
/// socket accepts connections.
pub fn serve(cfg: DbTierConfig, ready: impl FnOnce(&Addr)) -> Result<(), String> {
    // Fail early (before listening) when the database cannot be opened.
    drop(cfg.db.open()?);
    let listener = Listener::bind(&cfg.listen)?;
    ready(&listener.local_addr());
    let active = Arc::new(AtomicUsize::new(0));
    let cfg = Arc::new(cfg);
    loop {
        let conn = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("interlab datacenter db: accept: {e}");
                std::thread::sleep(std::time::Duration::from_millis(50));
                continue;
            }
        };
        if active.load(Ordering::SeqCst) >= cfg.max_connections {
            let mut c = conn;
            let _ = write_frame(&mut c, &DbResp { v: 1, ok: false, sets: vec![], kind: Some("db".into()), error: Some(format!("database tier full ({} connections)", cfg.max_connections)), cpu_ns: 0, wall_ns: 0 }, b"");
            continue;
        }
        active.fetch_add(1, Ordering::SeqCst);
        let (cfg, done) = (cfg.clone(), active.clone());
        let spawned = std::thread::Builder::new().name("db-conn".into()).stack_size(512 * 1024).spawn(move || {
            connection(conn, &cfg);
            done.fetch_sub(1, Ordering::SeqCst);
        });
        if let Err(e) = spawned {
            eprintln!("interlab datacenter db: cannot start a connection thread: {e}");
            active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn connection(mut conn: crate::wire::Conn, cfg: &DbTierConfig) {
    let mut db = match cfg.db.open() {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("interlab datacenter db: {e}");
            None
        }
    };
    loop {
        let c0 = thread_cpu_ns();
        let req: DbReq = match read_frame(&mut conn) {
            Ok((r, _, _)) => r,
            Err(FrameError::Closed) => return,
            Err(FrameError::Protocol(m)) => {
                let _ = write_frame(&mut conn, &DbResp { v: 1, ok: false, sets: vec![], kind: Some("bad_request".into()), error: Some(m), cpu_ns: 0, wall_ns: 0 }, b"");
                return;
            }
            Err(FrameError::Io(e)) => {
                if !cfg.quiet {
                    eprintln!("interlab datacenter db: connection dropped: {e}");
                }
                return;
            }
        };
        let mut resp = match db.as_mut() {
            Some(d) => execute(d.as_mut(), &req, cfg.opts),
            None => DbResp { v: 1, ok: false, sets: vec![], kind: Some("db".into()), error: Some("database unavailable".into()), cpu_ns: 0, wall_ns: 0 },
        };
        // Count the frame read and decode too.
        resp.cpu_ns = thread_cpu_ns().saturating_sub(c0);
        if write_frame(&mut conn, &resp, b"").is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::procs::Fault;
    use crate::db::sqlite::Sqlite;
    use crate::db::{Backend, Value};
    use crate::wire::Conn;
    use serde_json::json;
    use std::time::Duration;

    fn fresh() -> Sqlite {
        let mut db = Sqlite::memory().unwrap();
        populate(&mut db, Scale::new(1000, 1).unwrap(), 1, &mut |_| {}).unwrap();
        db
    }

    fn count(db: &mut dyn Backend, sql: &str) -> i64 {
        db.query(sql, &[]).unwrap()[0][0].as_i64().unwrap_or(0)
    }

    /// Row counts and the stock of the items involved: everything buy_confirm may touch.
    fn snapshot(db: &mut dyn Backend, sc: i64) -> Vec<i64> {
        vec![
            count(db, "SELECT COUNT(*) FROM orders"),
            count(db, "SELECT COUNT(*) FROM order_line"),
            count(db, "SELECT COUNT(*) FROM cc_xacts"),
            count(db, "SELECT COUNT(*) FROM address"),
            count(db, &format!("SELECT COUNT(*) FROM shopping_cart_line WHERE scl_sc_id = {sc}")),
            count(db, &format!("SELECT CAST(SUM(i_stock) AS BIGINT) FROM item WHERE i_id IN (SELECT scl_i_id FROM shopping_cart_line WHERE scl_sc_id = {sc})")),
            count(db, "SELECT CAST(SUM(i_stock) AS BIGINT) FROM item"),
        ]
    }

    fn req(op: &str, args: J) -> DbReq {
        DbReq { v: 1, op: op.into(), args: args.as_array().cloned().unwrap_or_default() }
    }

    fn cart_with_items(db: &mut dyn Backend, items: &[i64]) -> i64 {
        let mut sc = 0;
        for &i in items {
            let r = execute(db, &req("shopping_cart", json!([sc, i, [], 1])), ProcOptions::default());
            assert!(r.ok, "{:?}", r.error);
            sc = r.sets[0][0][0].as_i64().unwrap();
        }
        sc
    }

    fn buy(sc: i64, fault: Option<Fault>, ship: J) -> DbReq {
        req(
            "buy_confirm",
            json!([sc, 12, "VISA", "4111111111111111", "Ada Lovelace", 1_900_000_000, "AIR", ship, fault.map(|f| f.as_str())]),
        )
    }

    #[test]
    fn buy_confirm_is_atomic_under_injected_failures() {
        let mut db = fresh();
        let allow = ProcOptions { allow_faults: true };
        let sc = cart_with_items(&mut db, &[3, 5, 5, 7]);
        let before = snapshot(&mut db, sc);
        assert_eq!(before[4], 3, "three distinct lines");
        let ship = json!({"street1": "1 New St", "street2": "", "city": "Troy", "state": "NY", "zip": "12180", "country": "Canada"});
        for fault in [Fault::AfterOrderLines, Fault::BeforeCommit] {
            let r = execute(&mut db, &buy(sc, Some(fault), ship.clone()), allow);
            assert!(!r.ok);
            assert_eq!(r.kind.as_deref(), Some("fault"), "{:?}", r.error);
            assert_eq!(snapshot(&mut db, sc), before, "{fault:?} left rows behind");
        }
        // Faults are refused unless the tier allows them.
        let r = execute(&mut db, &buy(sc, Some(Fault::AfterOrderLines), J::Null), ProcOptions::default());
        assert_eq!(r.kind.as_deref(), Some("bad_request"));
        assert_eq!(snapshot(&mut db, sc), before);
        // The cart survived, so the order can be retried and then commits as a whole.
        let r = execute(&mut db, &buy(sc, None, ship), allow);
        assert!(r.ok, "{:?}", r.error);
        let o_id = r.sets[0][0][0].as_i64().unwrap();
        let after = snapshot(&mut db, sc);
        assert_eq!(after[0], before[0] + 1);
        assert_eq!(after[1], before[1] + 3);
        assert_eq!(after[2], before[2] + 1);
        assert_eq!(after[3], before[3] + 1, "new shipping address");
        assert_eq!(after[4], 0, "cart emptied");
        let lines = count(&mut db, &format!("SELECT CAST(SUM(ol_qty) AS BIGINT) FROM order_line WHERE ol_o_id = {o_id}"));
        assert_eq!(lines, 4);
        let total = db.query(&format!("SELECT o_total, cx_xact_amt FROM orders, cc_xacts WHERE o_id = {o_id} AND cx_o_id = o_id"), &[]).unwrap();
        assert_eq!(total[0][0], total[0][1]);
        // An empty cart orders nothing.
        let r = execute(&mut db, &buy(sc, None, J::Null), allow);
        assert!(r.ok && r.sets[0].is_empty());
    }

    /// A database of the test's own on the server INTERLAB_PG_URL points at.
    fn pg_database(name: &str) -> Option<DbSpec> {
        let Ok(base) = std::env::var("INTERLAB_PG_URL") else {
            eprintln!("note: INTERLAB_PG_URL is not set; skipping the PostgreSQL atomicity test (.ci/run sets it up)");
            return None;
        };
        let mut admin = crate::db::pg::Postgres::connect(&base).unwrap();
        admin.batch(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).unwrap();
        admin.batch(&format!("CREATE DATABASE {name}")).unwrap();
        let (prefix, _) = base.rsplit_once('/').unwrap();
        Some(DbSpec::Postgres(format!("{prefix}/{name}")))
    }

    #[test]
    fn postgres_buy_confirm_is_atomic_when_available() {
        let Some(spec) = pg_database("interlab_atomic_test") else { return };
        ensure_populated(&spec, PopulateRequest { scale: Scale::new(1000, 1).unwrap(), seed: 5, explicit: true, force: true }, true).unwrap();
        let mut db = spec.open().unwrap();
        let db = db.as_mut();
        let allow = ProcOptions { allow_faults: true };
        let sc = cart_with_items(db, &[3, 5, 5, 7]);
        let before = snapshot(db, sc);
        let ship = json!({"street1": "1 New St", "street2": "", "city": "Troy", "state": "NY", "zip": "12180", "country": "Canada"});
        for fault in [Fault::AfterOrderLines, Fault::BeforeCommit] {
            let r = execute(db, &buy(sc, Some(fault), ship.clone()), allow);
            assert_eq!(r.kind.as_deref(), Some("fault"), "{:?}", r.error);
            assert_eq!(snapshot(db, sc), before, "{fault:?} left rows behind");
        }
        let r = execute(db, &buy(sc, None, ship), allow);
        assert!(r.ok, "{:?}", r.error);
        let after = snapshot(db, sc);
        assert_eq!((after[0], after[1], after[2], after[3], after[4]), (before[0] + 1, before[1] + 3, before[2] + 1, before[3] + 1, 0));
        // Identity columns continue after the populated ids (PostgreSQL sequences are not
        // transactional: the two rolled-back attempts used up ids 2593 and 2594).
        assert_eq!(r.sets[0][0][0].as_i64(), Some(2595));
        // Every operation runs on PostgreSQL too.
        for (op, args) in [
            ("best_sellers", json!(["HISTORY"])),
            ("new_products", json!(["ARTS"])),
            ("search", json!(["title", "Og"])),
            ("search", json!(["author", "Og"])),
            ("order_display", json!(["OGAL", "ogal"])),
            ("admin_confirm", json!([10, 12.5, "/img/item/11.png", "/img/thumb/11.png"])),
            ("info", json!([])),
        ] {
            let r = execute(db, &req(op, args.clone()), allow);
            assert!(r.ok, "{op} {args}: {:?}", r.error);
        }
        let newc = json!({"fname": "Grace", "lname": "Hopper", "street1": "1 Navy Way", "street2": "", "city": "Arlington",
            "state": "VA", "zip": "22201", "country": "United States", "phone": "5551234", "email": "g@h.org", "birthdate": "0", "data": "x"});
        let r = execute(db, &req("buy_request", json!([0, "", "", newc, sc])), allow);
        assert!(r.sets[0][0][0].as_i64().unwrap() > 2880, "{:?}", r.error);
    }

    #[test]
    fn concurrent_carts_and_orders_on_one_sqlite_file() {
        let dir = std::env::temp_dir().join(format!("interlab-dbconc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = DbSpec::Sqlite(dir.join("c.sqlite"));
        ensure_populated(&spec, PopulateRequest { scale: Scale::new(1000, 1).unwrap(), seed: 2, explicit: true, force: true }, true).unwrap();
        std::thread::scope(|s| {
            for t in 0..6i64 {
                let spec = &spec;
                s.spawn(move || {
                    let mut db = spec.open().unwrap();
                    for k in 0..15i64 {
                        let sc = cart_with_items(db.as_mut(), &[1 + (t * 37 + k) % 1000, 1 + (k * 11) % 1000]);
                        let r = execute(db.as_mut(), &buy(sc, None, J::Null), ProcOptions::default());
                        assert!(r.ok, "{:?}", r.error);
                        let r = execute(db.as_mut(), &req("best_sellers", json!(["ARTS"])), ProcOptions::default());
                        assert!(r.ok, "{:?}", r.error);
                    }
                });
            }
        });
        let mut db = spec.open().unwrap();
        assert_eq!(count(db.as_mut(), "SELECT COUNT(*) FROM orders"), 2592 + 90);
        assert_eq!(count(db.as_mut(), "SELECT COUNT(*) FROM cc_xacts"), 2592 + 90);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn stock_is_replenished_below_ten() {
        let mut db = fresh();
        db.exec("UPDATE item SET i_stock = 12 WHERE i_id = 9", &[]).unwrap();
        let sc = cart_with_items(&mut db, &[9]);
        execute(&mut db, &req("shopping_cart", json!([sc, 0, [[9, 5]], 1])), ProcOptions::default());
        let r = execute(&mut db, &buy(sc, None, J::Null), ProcOptions::default());
        assert!(r.ok, "{:?}", r.error);
        assert_eq!(count(&mut db, "SELECT i_stock FROM item WHERE i_id = 9"), 12 - 5 + 21);
    }

    #[test]
    fn every_operation_answers_and_bad_requests_are_errors() {
        let mut db = fresh();
        let o = ProcOptions::default();
        for (op, args) in [
            ("ping", json!([])),
            ("info", json!([])),
            ("customer_name", json!([12])),
            ("promo", json!([1])),
            ("new_products", json!(["ARTS"])),
            ("best_sellers", json!(["HISTORY"])),
            ("item_detail", json!([10])),
            ("search", json!(["author", "Og"])),
            ("search", json!(["title", "Ogal"])),
            ("search", json!(["subject", "COOKING"])),
            ("customer_uname", json!([12])),
            ("buy_request", json!([1, "OGAL", "ogal", null, 0])),
            ("order_display", json!(["OGAL", "ogal"])),
            ("admin_confirm", json!([10, 12.5, "/img/item/11.png", "/img/thumb/11.png"])),
        ] {
            let r = execute(&mut db, &req(op, args.clone()), o);
            assert!(r.ok, "{op} {args}: {:?}", r.error);
        }
        let r = execute(&mut db, &req("promo", json!([1])), o);
        assert_eq!(r.sets[0].len(), 5);
        let r = execute(&mut db, &req("best_sellers", json!(["HISTORY"])), o);
        assert!(!r.sets[0].is_empty() && r.sets[0].len() <= 50);
        let r = execute(&mut db, &req("admin_confirm", json!([10, 12.5, "/img/item/11.png", "/img/thumb/11.png"])), o);
        assert_eq!(r.sets[0][0][12], Value::Real(12.5));
        for (op, args, kind) in [
            ("nope", json!([]), "bad_request"),
            ("item_detail", json!([]), "bad_request"),
            ("item_detail", json!(["x"]), "bad_request"),
            ("item_detail", json!([999_999]), "not_found"),
            ("search", json!(["isbn", "1"]), "bad_request"),
            ("buy_request", json!([1, "OGAL", "wrong", null, 0]), "auth"),
            ("buy_request", json!([1, "NOBODY", "x", null, 0]), "auth"),
            ("order_display", json!(["OGAL", "x"]), "auth"),
            ("shopping_cart", json!([0, 999_999, [], 1]), "not_found"),
            ("shopping_cart", json!([0, 0, "x", 1]), "bad_request"),
        ] {
            let r = execute(&mut db, &req(op, args.clone()), o);
            assert!(!r.ok, "{op} {args}");
            assert_eq!(r.kind.as_deref(), Some(kind), "{op} {args}: {:?}", r.error);
        }
        // A failed cart add created no cart.
        assert_eq!(count(&mut db, "SELECT COUNT(*) FROM shopping_cart"), 0);
    }

    #[test]
    fn new_customer_registration_then_order() {
        let mut db = fresh();
        let o = ProcOptions::default();
        let sc = cart_with_items(&mut db, &[4]);
        let newc = json!({"fname": "Grace", "lname": "Hopper", "street1": "1 Navy Way", "street2": "", "city": "Arlington",
            "state": "VA", "zip": "22201", "country": "United States", "phone": "5551234", "email": "g@h.org", "birthdate": "0", "data": "x"});
        let r = execute(&mut db, &req("buy_request", json!([0, "", "", newc, sc])), o);
        assert!(r.ok, "{:?}", r.error);
        let c_id = r.sets[0][0][0].as_i64().unwrap();
        assert_eq!(c_id, 2881);
        assert_eq!(r.sets[0][0][1].text(), crate::tpcw::customer_uname(2881));
        assert_eq!(r.sets[1].len(), 1);
        let uname = r.sets[0][0][1].text();
        let r = execute(&mut db, &req("order_display", json!([uname, uname.to_lowercase()])), o);
        assert!(r.ok && r.sets[0].is_empty(), "no order yet");
    }

    #[test]
    fn served_over_a_socket_including_a_failed_transaction() {
        let dir = std::env::temp_dir().join(format!("interlab-dbtier-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("b.sqlite");
        let spec = DbSpec::Sqlite(path.clone());
        ensure_populated(&spec, PopulateRequest { scale: Scale::new(1000, 1).unwrap(), seed: 3, explicit: true, force: false }, true).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let cfg = DbTierConfig { listen: Addr::Tcp("127.0.0.1:0".into()), db: spec.clone(), opts: ProcOptions { allow_faults: true }, max_connections: 8, quiet: true };
        std::thread::spawn(move || serve(cfg, |a| tx.send(a.clone()).unwrap()));
        let addr = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let mut c = Conn::connect(&addr, Duration::from_secs(2)).unwrap();
        let call = |c: &mut Conn, r: DbReq| -> DbResp {
            write_frame(c, &r, b"").unwrap();
            read_frame::<_, DbResp>(c).unwrap().0
        };
        let r = call(&mut c, req("shopping_cart", json!([0, 3, [], 1])));
        let sc = r.sets[0][0][0].as_i64().unwrap();
        let mut other = spec.open().unwrap();
        let before = snapshot(other.as_mut(), sc);
        let r = call(&mut c, buy(sc, Some(Fault::AfterOrderLines), J::Null));
        assert_eq!(r.kind.as_deref(), Some("fault"));
        assert!(r.cpu_ns > 0);
        assert_eq!(snapshot(other.as_mut(), sc), before);
        let r = call(&mut c, buy(sc, None, J::Null));
        assert!(r.ok);
        assert_eq!(snapshot(other.as_mut(), sc)[0], before[0] + 1);
        // A second populate leaves the data alone.
        let m = ensure_populated(&spec, PopulateRequest { scale: Scale::new(1000, 1).unwrap(), seed: 3, explicit: false, force: false }, true).unwrap();
        assert_eq!(m.customers, 2880);
        assert_eq!(snapshot(other.as_mut(), sc)[0], before[0] + 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
