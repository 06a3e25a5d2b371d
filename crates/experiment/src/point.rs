//! One point of an experiment resolved to everything its simulation depends on, and the
//! canonical key of that: two points with equal keys simulate the same events and give the
//! same [`Point`], so a run of many experiments (`interlab reproduce`) simulates each key
//! once and hands the result to every figure that shows it.

use crate::spec::{Experiment, Measure, PointSpec};
use interlab_model::{ModelError, Point, Profile, Scenario, Topology};
use interlab_patterns::{PatternKind, PatternSpec};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One point of one series, resolved.
#[derive(Debug, Clone)]
pub struct PointJob {
    /// Index of the series in its experiment.
    pub series: usize,
    /// Where on the series' sweep it lies.
    pub pt: PointSpec,
    /// The series' set-up with this point's distance, clients and processes.
    pub scenario: Scenario,
    /// The pattern at this point's size.
    pub spec: PatternSpec,
    /// Measures the connection set-up time instead of running the pattern.
    pub connect: bool,
    /// The experiment's seed: part of the key so that points of experiments with different
    /// seeds never share, though the model draws nothing from it today.
    pub seed: u64,
}

impl PointJob {
    /// The point at place `pt` of series `series` of `exp`.
    pub fn new(exp: &Experiment, series: usize, pt: PointSpec) -> PointJob {
        let s = &exp.series[series];
        let mut scenario = s.setup.clone();
        if let Some(m) = pt.miles {
            scenario.topology = Topology::Wan { miles: m };
        }
        scenario.clients = pt.clients;
        scenario.procs_per_node = pt.procs;
        let spec = s.pattern_at(pt.size);
        // The spec's `socket_trains`, or unset, trains where the model finds them exact.
        scenario.tcp_trains = s.socket_trains.unwrap_or_else(|| scenario.socket_trains_exact(&spec));
        PointJob { series, pt, scenario, spec, connect: s.measure == Measure::Connect, seed: exp.seed }
    }

    /// Simulates the point.
    pub fn run(&self) -> Result<Point, ModelError> {
        if self.connect {
            interlab_model::connect::connect_time(&self.scenario)
        } else {
            self.scenario.run(&self.spec)
        }
    }

    /// A rough count of the events the point will simulate, to start the longest points of
    /// a run first: the messages of the pattern (both directions, every process pair and
    /// client) times the 2 KiB pieces of each, four events a piece through a socket stack
    /// and two otherwise. Only an order: it decides no result.
    pub fn cost_estimate(&self) -> u64 {
        if self.connect {
            return 100;
        }
        let p = &self.spec;
        let rounds = u64::from(p.warmup) + u64::from(p.iterations);
        let messages = match p.kind {
            PatternKind::Latency => 2 * rounds,
            PatternKind::Bandwidth | PatternKind::BiBandwidth => rounds * u64::from(p.window.max(1)),
            PatternKind::Pipelined | PatternKind::BiPipelined => rounds,
        };
        let directions = if p.kind.is_bidirectional() { 2 } else { 1 };
        let streams = u64::from(self.scenario.procs_per_node.max(1)) * u64::from(self.scenario.clients.max(1));
        let per_piece = if self.scenario.sock.is_some() { 4 } else { 2 };
        messages.saturating_mul(directions * streams).saturating_mul(1 + p.size / 2048).saturating_mul(per_piece)
    }
}

/// Makes the canonical keys of points: every field of the scenario (its profile by the
/// whole of its contents, so two loads of one profile share and an edited copy does not),
/// the pattern, whether the connection time is measured, and the seed.
#[derive(Default)]
pub struct PointKeys {
    /// Profiles seen, by address (the `Arc` is kept so the address stays theirs), with the
    /// number of their contents.
    by_address: HashMap<*const Profile, (Arc<Profile>, usize)>,
    /// Profile contents (`Debug`, every field) -> number.
    by_contents: BTreeMap<String, usize>,
}

impl PointKeys {
    pub fn new() -> PointKeys {
        PointKeys::default()
    }

    fn profile_number(&mut self, p: &Arc<Profile>) -> usize {
        if let Some((_, n)) = self.by_address.get(&Arc::as_ptr(p)) {
            return *n;
        }
        let next = self.by_contents.len();
        let n = *self.by_contents.entry(format!("{:?}", **p)).or_insert(next);
        self.by_address.insert(Arc::as_ptr(p), (p.clone(), n));
        n
    }

    /// The key of `job`. Two jobs have equal keys only if their simulations are given equal
    /// inputs; the scenario is taken apart field by field without `..`, so a field added to
    /// `Scenario` does not compile here until it is part of the key.
    pub fn key(&mut self, job: &PointJob) -> String {
        let Scenario {
            profile,
            topology,
            service,
            ports,
            procs_per_node,
            max_events,
            trains,
            tcp_trains,
            mpi,
            qps_per_port,
            clients,
            initiator,
            sock,
            sock_mix,
            io,
        } = &job.scenario;
        let profile = self.profile_number(profile);
        let trains = if *tcp_trains { format!("{trains}+tcp") } else { trains.to_string() };
        // `Debug` of floats is their shortest exact text: equal text, equal value.
        format!(
            "profile {profile}|{topology:?}|{service:?}|{ports:?}|{procs_per_node}|{max_events}|{trains}|{mpi:?}|{qps_per_port}|{clients}|{initiator:?}|{sock:?}|{sock_mix:?}|{io:?}|{:?}|connect {}|seed {}",
            job.spec, job.connect, job.seed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interlab_model::{FileServers, FileStore, Initiator, MpiDesign, Ports, Service, SockStack};
    use interlab_patterns::Op;

    fn base() -> PointJob {
        let profile = Arc::new(Profile::load("r805-connectx-ddr").expect("profile"));
        PointJob {
            series: 0,
            pt: PointSpec { size: 4096, miles: None, clients: 1, procs: 1 },
            scenario: Scenario::new(profile, Service::Rc, Ports::One, 1),
            spec: PatternSpec { kind: PatternKind::Latency, op: Op::Send, size: 4096, window: 1, warmup: 10, iterations: 100 },
            connect: false,
            seed: 1,
        }
    }

    #[test]
    fn points_that_differ_in_any_input_have_different_keys() {
        let mut variants: Vec<(&str, PointJob)> = Vec::new();
        let mut v = |what: &'static str, f: &dyn Fn(&mut PointJob)| {
            let mut j = base();
            f(&mut j);
            variants.push((what, j));
        };
        v("profile id", &|j| j.scenario.profile = Arc::new(Profile::load("xeon24-mt23108-pcix").expect("profile")));
        v("one profile parameter", &|j| {
            let mut p = (*j.scenario.profile).clone();
            p.link.mtu_bytes += 1;
            j.scenario.profile = Arc::new(p);
        });
        v("topology", &|j| j.scenario.topology = Topology::Wan { miles: 10.0 });
        v("distance", &|j| j.scenario.topology = Topology::Wan { miles: 10.000000000000002 });
        v("service", &|j| j.scenario.service = Service::Ud);
        v("ports", &|j| j.scenario.ports = Ports::Stripe { threshold: 8192 });
        v("stripe threshold", &|j| j.scenario.ports = Ports::Stripe { threshold: 8193 });
        v("processes", &|j| j.scenario.procs_per_node = 2);
        v("max events", &|j| j.scenario.max_events -= 1);
        v("trains", &|j| j.scenario.trains = false);
        v("mpi", &|j| j.scenario.mpi = Some(MpiDesign::Rc));
        v("qps per port", &|j| j.scenario.qps_per_port = 2);
        v("clients", &|j| j.scenario.clients = 2);
        v("initiator", &|j| j.scenario.initiator = Initiator::Clients);
        v("socket", &|j| j.scenario.sock = Some(SockStack::ipoib_ud()));
        v("socket option", &|j| j.scenario.sock = Some(SockStack { aic: false, ..SockStack::ipoib_ud() }));
        v("second socket", &|j| j.scenario.sock_mix = Some(SockStack::ipoib_ud()));
        v("file servers", &|j| j.scenario.io = Some(FileServers { servers: 1, store: FileStore::Ram, bytes_per_pair: 1 }));
        v("pattern kind", &|j| j.spec.kind = PatternKind::Bandwidth);
        v("op", &|j| j.spec.op = Op::RdmaWrite);
        v("size", &|j| j.spec.size += 1);
        v("window", &|j| j.spec.window += 1);
        v("warmup", &|j| j.spec.warmup += 1);
        v("iterations", &|j| j.spec.iterations += 1);
        v("connection time", &|j| j.connect = true);
        v("seed", &|j| j.seed = 2);
        let mut keys = PointKeys::new();
        let b = keys.key(&base());
        let mut seen: BTreeMap<String, &str> = BTreeMap::new();
        for (what, j) in &variants {
            let k = keys.key(j);
            assert_ne!(k, b, "{what}: same key as the base point");
            if let Some(other) = seen.insert(k, what) {
                panic!("{what} and {other}: same key");
            }
        }
    }

    #[test]
    fn equal_points_share_a_key_whatever_their_series_or_profile_copy() {
        let mut keys = PointKeys::new();
        let a = base();
        let mut b = base();
        // Another load of the same profile, another series, another place on the sweep.
        b.scenario.profile = Arc::new(Profile::load("r805-connectx-ddr").expect("profile"));
        b.series = 3;
        b.pt.clients = 9;
        assert!(!Arc::ptr_eq(&a.scenario.profile, &b.scenario.profile));
        assert_eq!(keys.key(&a), keys.key(&b));
    }

    #[test]
    fn the_estimate_orders_longer_points_first() {
        let small = base();
        let mut big = base();
        big.spec.size = 1 << 20;
        let mut sock = base();
        sock.scenario.sock = Some(SockStack::ipoib_ud());
        assert!(big.cost_estimate() > 100 * small.cost_estimate());
        assert!(sock.cost_estimate() > small.cost_estimate());
    }
}
