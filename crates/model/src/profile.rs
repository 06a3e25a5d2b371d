//! Testbed profiles: data files of physical primitives, each with its provenance.

use crate::hw::adapter_spec::{AdapterSpec, HostSpec};
use crate::hw::bus::BusSpec;
use crate::hw::eth_spec::EthSpec;
use crate::hw::link::LinkSpec;
use crate::hw::switch_spec::SwitchSpec;
use crate::hw::wan_spec::WanSpec;
use crate::ulp::mpi::MpiSpec;
use crate::ulp::stack_spec::StackSpec;
use crate::params::{ParamError, Table};

/// Profiles shipped with interlab (embedded in the binary).
pub const BUILTIN: &[(&str, &str)] = &[
    ("xeon-mt25208-pcie", include_str!("../../../profiles/xeon-mt25208-pcie.toml")),
    ("xeon-mt23108-pcix", include_str!("../../../profiles/xeon-mt23108-pcix.toml")),
    ("epyc-hdr-pcie4", include_str!("../../../profiles/epyc-hdr-pcie4.toml")),
    ("woodcrest-infinihost-longbow", include_str!("../../../profiles/woodcrest-infinihost-longbow.toml")),
    ("r805-connectx-ddr", include_str!("../../../profiles/r805-connectx-ddr.toml")),
    ("xeon24-mt23108-pcix", include_str!("../../../profiles/xeon24-mt23108-pcix.toml")),
    ("cx3-fdr-pcie3", include_str!("../../../profiles/cx3-fdr-pcie3.toml")),
    ("cx5-edr-pcie3", include_str!("../../../profiles/cx5-edr-pcie3.toml")),
    ("cx5-roce100-pcie3", include_str!("../../../profiles/cx5-roce100-pcie3.toml")),
    ("cx7-ndr-pcie5", include_str!("../../../profiles/cx7-ndr-pcie5.toml")),
];

/// A testbed: hosts, bus, adapter, links, switch.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Profile id.
    pub id: String,
    /// One-line description.
    pub description: String,
    pub host: HostSpec,
    pub bus: BusSpec,
    pub adapter: AdapterSpec,
    pub link: LinkSpec,
    pub switch: SwitchSpec,
    /// Wide-area extenders, for testbeds that have them.
    pub wan: Option<WanSpec>,
    /// The MPI library, for testbeds whose MPI results are modelled.
    pub mpi: Option<MpiSpec>,
    /// Host socket-stack costs, for testbeds whose socket results are modelled.
    pub stack: Option<StackSpec>,
    /// An adapter port that runs Ethernet (VPI), for testbeds that have one.
    pub eth: Option<EthSpec>,
}

impl Profile {
    /// Parses profile text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Profile, ParamError> {
        let root = Table::parse(file, text)?;
        let mut t = Table::new(file, "", &root);
        let mut p = t.table("profile")?;
        let id = p.string("id")?.to_string();
        let description = p.string("description")?.to_string();
        p.finish()?;
        // A section parsed by its type's `from_table` (with any further arguments, such as the
        // host's clock for sections whose CPU costs may be given in cycles), then checked for
        // unknown keys.
        macro_rules! section {
            ($name:literal, $ty:ty $(, $arg:expr)*) => {{
                let mut s = t.table($name)?;
                let v = <$ty>::from_table(&mut s $(, $arg)*)?;
                s.finish()?;
                v
            }};
        }
        let host = section!("host", HostSpec);
        let bus = section!("bus", BusSpec);
        let adapter = section!("adapter", AdapterSpec);
        let link = section!("link", LinkSpec);
        let switch = section!("switch", SwitchSpec);
        let wan = if t.has("wan") { Some(section!("wan", WanSpec)) } else { None };
        let clock = host.clock();
        let mpi = if t.has("mpi") { Some(section!("mpi", MpiSpec, &clock)) } else { None };
        let stack = if t.has("stack") { Some(section!("stack", StackSpec, &clock)) } else { None };
        let eth = if t.has("eth") { Some(section!("eth", EthSpec, &clock)) } else { None };
        if let Some(e) = &eth {
            if e.port as u32 >= adapter.ports {
                return Err(ParamError {
                    file: file.to_string(),
                    key: "eth.port".into(),
                    message: format!("the adapter has {} port(s); expected 1..={}", adapter.ports, adapter.ports),
                });
            }
        }
        t.finish()?;
        Ok(Profile { id, description, host, bus, adapter, link, switch, wan, mpi, stack, eth })
    }

    /// A built-in profile by id, or a profile file by path.
    pub fn load(name_or_path: &str) -> Result<Profile, ParamError> {
        if let Some((_, text)) = BUILTIN.iter().find(|(id, _)| *id == name_or_path) {
            return Profile::parse(&format!("built-in profile {name_or_path}"), text);
        }
        let path = std::path::Path::new(name_or_path);
        if path.exists() {
            let text = std::fs::read_to_string(path).map_err(|e| ParamError {
                file: name_or_path.to_string(),
                key: String::new(),
                message: format!("cannot read: {e}"),
            })?;
            return Profile::parse(name_or_path, &text);
        }
        let known: Vec<&str> = BUILTIN.iter().map(|(id, _)| *id).collect();
        Err(ParamError {
            file: name_or_path.to_string(),
            key: String::new(),
            message: format!("no such profile file, and not a built-in profile (built-in: {})", known.join(", ")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_parse() {
        for (id, _) in BUILTIN {
            let p = Profile::load(id).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&p.id, id);
        }
    }

    #[test]
    fn missing_and_unknown_keys_are_named() {
        let text = BUILTIN[0].1;
        let broken = text.replacen("rx_packet_ns = {", "rx_packet_nss = {", 1);
        let e = Profile::parse("x.toml", &broken).unwrap_err();
        assert_eq!(e.file, "x.toml");
        assert!(e.key.contains("rx_packet_ns"), "{e}");
        let e = Profile::load("no-such-profile").unwrap_err();
        assert!(e.message.contains("built-in"), "{e}");
    }

    #[test]
    fn meaningless_numbers_are_rejected_with_key_value_and_range() {
        let text = BUILTIN[0].1;
        for (from, to, key, msg) in [
            ("lanes = { value = 8,", "lanes = { value = 1e300,", "bus.lanes", "1..=32"),
            ("lanes = { value = 8,", "lanes = { value = 4294967296,", "bus.lanes", "found 4294967296"),
            ("dllp_fraction = { value = 0.0026,", "dllp_fraction = { value = 3.5,", "bus.dllp_fraction", "out of range (allowed 0 to 1 fraction)"),
            ("reverse_dllp_bytes = { value = 8,", "reverse_dllp_bytes = { value = 2.5,", "bus.reverse_dllp_bytes", "found 2.5"),
        ] {
            assert!(text.contains(from), "{from}");
            let e = Profile::parse("x.toml", &text.replacen(from, to, 1)).unwrap_err();
            assert_eq!(e.file, "x.toml");
            assert!(e.key.contains(key) && e.message.contains(msg), "{e}");
        }
    }
}
