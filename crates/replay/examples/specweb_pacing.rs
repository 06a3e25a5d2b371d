//! How far pacing the web tier's sends could shrink SPECweb's offload gain (docs/datacenter.md,
//! "What moves WIPS between protocols", SPECweb). Reads the pages and the web tier's own work
//! from `studies/ipoib-offload/dc-fig13.toml`, takes the per-message costs of IPoIB-UD with and
//! without LRO/LSO from the socket model, and prints the web tier's CPU per page (us) and the
//! gain it gives when the web tier binds, with each page and image sent whole and in pieces of
//! 16 KiB, 8 KiB, 4 KiB and one 2,044-byte segment (a client that opens its window a piece at
//! a time).
//!
//! Run from the repository root: `cargo run --release -p interlab-replay --example specweb_pacing`

use interlab_replay::{DcSpec, NetCost, Protocol};
use toml::Value;

fn num(v: &Value) -> f64 {
    match v {
        Value::Integer(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Table(t) => t.get("value").map(num).unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

fn main() -> Result<(), String> {
    let path = "studies/ipoib-offload/dc-fig13.toml";
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e} (run from the repository root)"))?;
    let s = DcSpec::parse(path, &text)?.remove(0);
    let p = |k: &str| s.params.get(k).map(num).ok_or_else(|| format!("{path}: params.{k} missing"));
    let (jsp_us, static_us, ssl_ns_per_byte, handshake_us, new_share) =
        (p("jsp_cpu_ns")? / 1e3, p("static_cpu_ns")? / 1e3, p("ssl_ns_per_byte")?, p("ssl_handshake_ns")? / 1e3, p("ssl_new_session_share")?);
    let (req, besim_req, besim_resp) = (p("request_bytes")? as u64, p("besim_request_bytes")? as u64, p("besim_response_bytes")? as u64);
    // (weight, ssl, page bytes, image sizes)
    let pages: Vec<(f64, bool, u64, Vec<u64>)> = s.params.get("pages").and_then(|v| v.as_array()).ok_or("params.pages missing")?
        .iter()
        .filter_map(|t| {
            let t = t.as_table()?;
            Some((num(t.get("weight")?), t.get("ssl")?.as_bool()?, t.get("bytes")?.as_integer()? as u64, t.get("images")?.as_array()?.iter().filter_map(|x| x.as_integer().map(|i| i as u64)).collect()))
        })
        .collect();
    let tw: f64 = pages.iter().map(|p| p.0).sum();
    let own: f64 = pages
        .iter()
        .map(|(w, ssl, b, im)| {
            let mut c = jsp_us + im.len() as f64 * static_us;
            if *ssl {
                c += (b + im.iter().sum::<u64>()) as f64 * ssl_ns_per_byte / 1e3 + new_share * handshake_us;
            }
            c * w / tw
        })
        .sum();
    println!("web tier's own work per page: {own:.0} us");
    let off = NetCost::from_model(&s.profile, Protocol::IpoibUdOffload)?;
    let none = NetCost::from_model(&s.profile, Protocol::IpoibUd)?;
    for piece in [0u64, 16384, 8192, 4096, 2044] {
        let net = |c: &NetCost| -> f64 {
            let send = |b: u64| if piece == 0 || b <= piece { c.send_cpu(b) } else { (b / piece) as f64 * c.send_cpu(piece) + if b % piece > 0 { c.send_cpu(b % piece) } else { 0.0 } };
            pages.iter().map(|(w, _, b, im)| (c.recv_cpu(req) * (1 + im.len()) as f64 + send(*b) + im.iter().map(|&x| send(x)).sum::<f64>() + c.send_cpu(besim_req) + c.recv_cpu(besim_resp)) * w / tw).sum()
        };
        let (a, b) = (net(&off), net(&none));
        let what = if piece == 0 { "whole".to_string() } else { format!("{piece} B pieces") };
        println!("{what:>16}: network per page LRO+LSO {a:.0} us, none {b:.0} us; web-bound gain {:.1} %", ((own + b) / (own + a) - 1.0) * 100.0);
    }
    Ok(())
}
