//! Per-interaction work taken from a trace: for every successful page of a `drive` trace,
//! the CPU time of each server tier and the messages exchanged between the tiers (the page
//! request and response, each embedded image's request and response, web <-> app frames,
//! app <-> db frames). The replay draws a recorded sample of the interaction the browser
//! chose, so the work keeps the trace's own distribution.
//!
//! The built-in table comes from `crates/datacenter/data/tpcw-browsing-drive.jsonl`, a
//! trace captured on the development machine (see `crates/datacenter/data/README.md`).

use interlab_tpcw::tpcw::{Interaction, N_INTERACTIONS};
use interlab_tpcw::trace::{Flow, Kind, Source, Tier, Trace};
use interlab_kernel::Rng;
use std::path::Path;

/// The built-in TPC-W trace (browsing mix, JSON Lines).
pub const BUILTIN_TRACE: &str = include_str!("../../datacenter/data/tpcw-browsing-drive.jsonl");

/// One request and its reply between two tiers (bytes; `resp` 0 = no reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    pub req: u64,
    pub resp: u64,
}

/// One recorded interaction.
#[derive(Debug, Clone, PartialEq)]
pub struct PageSample {
    pub interaction: Interaction,
    /// The browser emulator's CPU for the page and its images (request, parsing), ns.
    pub browser_cpu_ns: u64,
    pub web_cpu_ns: u64,
    pub app_cpu_ns: u64,
    pub db_cpu_ns: u64,
    /// The page request and response between browser and web tier.
    pub page: Exchange,
    /// Each embedded image.
    pub images: Vec<Exchange>,
    pub web_app: Vec<Exchange>,
    pub app_db: Vec<Exchange>,
    /// Think time the browser took after it, us.
    pub think_us: Option<u64>,
}

fn pair(to: &Flow, from: &Flow) -> Vec<Exchange> {
    to.sizes.iter().enumerate().map(|(i, &req)| Exchange { req, resp: from.sizes.get(i).copied().unwrap_or(0) }).collect()
}

/// Samples per interaction.
#[derive(Debug, Clone, PartialEq)]
pub struct InteractionTable {
    /// Indexed by [`Interaction::index`].
    pub samples: Vec<Vec<PageSample>>,
    /// Where it came from (for reports).
    pub source: String,
}

impl InteractionTable {
    /// Builds the table from the successful page records of a `drive` trace.
    pub fn from_trace(trace: &Trace, source: &str) -> Result<InteractionTable, String> {
        let mut samples: Vec<Vec<PageSample>> = vec![Vec::new(); N_INTERACTIONS];
        for r in &trace.records {
            if r.source != Source::Drive || r.kind != Kind::Page || r.status != 200 || r.error.is_some() {
                continue;
            }
            let (Some(i), Some(b)) = (r.interaction, r.tier(Tier::Browser)) else { continue };
            if b.to_next.sizes.is_empty() {
                continue;
            }
            let web = r.tier(Tier::Web);
            let app = r.tier(Tier::App);
            let db = r.tier(Tier::Db);
            let all = pair(&b.to_next, &b.from_next);
            samples[i.index()].push(PageSample {
                interaction: i,
                browser_cpu_ns: b.cpu_ns,
                web_cpu_ns: web.map_or(0, |t| t.cpu_ns),
                app_cpu_ns: app.map_or(0, |t| t.cpu_ns),
                db_cpu_ns: db.map_or(0, |t| t.cpu_ns),
                page: all[0],
                images: all[1..].to_vec(),
                web_app: web.map_or(vec![], |t| pair(&t.to_next, &t.from_next)),
                app_db: app.map_or(vec![], |t| pair(&t.to_next, &t.from_next)),
                think_us: r.think_us,
            });
        }
        if samples.iter().all(|s| s.is_empty()) {
            return Err(format!(
                "{source}: no successful page records from the browser emulator (a trace written by `interlab datacenter drive --trace`)"
            ));
        }
        Ok(InteractionTable { samples, source: source.to_string() })
    }

    /// Reads a trace file and builds the table.
    pub fn read(path: &Path) -> Result<InteractionTable, String> {
        let t = Trace::read(path).map_err(|e| e.to_string())?;
        InteractionTable::from_trace(&t, &path.display().to_string())
    }

    /// The built-in table.
    pub fn builtin() -> InteractionTable {
        let t = Trace::from_reader(BUILTIN_TRACE.as_bytes(), Path::new("data/tpcw-browsing-drive.jsonl")).expect("built-in trace");
        InteractionTable::from_trace(&t, "built-in trace crates/datacenter/data/tpcw-browsing-drive.jsonl").expect("built-in table")
    }

    /// A recorded sample of interaction `i`; an interaction the trace lacks borrows a
    /// sample of any interaction (the next one in order that has samples).
    pub fn sample(&self, i: Interaction, rng: &mut Rng) -> &PageSample {
        let mut k = i.index();
        while self.samples[k].is_empty() {
            k = (k + 1) % N_INTERACTIONS;
        }
        let v = &self.samples[k];
        &v[rng.below(v.len() as u64) as usize]
    }

    /// Mean CPU (ns) of (web, app, db) per interaction under the given shares (sum 1).
    pub fn mean_cpu_ns(&self, shares: &[f64; N_INTERACTIONS]) -> [f64; 3] {
        let mut m = [0.0; 3];
        for (k, &w) in shares.iter().enumerate() {
            let mut kk = k;
            while self.samples[kk].is_empty() {
                kk = (kk + 1) % N_INTERACTIONS;
            }
            let v = &self.samples[kk];
            let n = v.len() as f64;
            m[0] += w * v.iter().map(|s| s.web_cpu_ns as f64).sum::<f64>() / n;
            m[1] += w * v.iter().map(|s| s.app_cpu_ns as f64).sum::<f64>() / n;
            m[2] += w * v.iter().map(|s| s.db_cpu_ns as f64).sum::<f64>() / n;
        }
        m
    }

    /// Total samples.
    pub fn len(&self) -> usize {
        self.samples.iter().map(|s| s.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_has_pages_images_and_tier_messages() {
        let t = InteractionTable::builtin();
        assert!(t.len() > 200);
        let home = &t.samples[Interaction::Home.index()];
        assert!(!home.is_empty());
        let s = &home[0];
        assert_eq!(s.images.len(), 11);
        assert!(s.page.resp > 1000 && s.web_cpu_ns > 0 && !s.web_app.is_empty());
    }

    #[test]
    fn a_trace_without_drive_pages_is_an_error() {
        let e = InteractionTable::from_trace(&Trace::default(), "x.jsonl").unwrap_err();
        assert!(e.contains("x.jsonl") && e.contains("drive"), "{e}");
    }
}
