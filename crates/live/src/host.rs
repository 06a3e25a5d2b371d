//! Host facts for records: kernel, CPU, and the interface (with driver and speed) that
//! carries traffic to or from an address, where sysfs says.

use interlab_patterns::HostFacts;
use std::ffi::CStr;
use std::net::IpAddr;

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

/// CPU model from /proc/cpuinfo.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// The interface holding local address `ip` (getifaddrs).
pub fn interface_of(ip: IpAddr) -> Option<String> {
    let mut found = None;
    // SAFETY: getifaddrs allocates a list we walk read-only and free with freeifaddrs.
    unsafe {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut head) != 0 {
            return None;
        }
        let mut p = head;
        while !p.is_null() {
            let a = (*p).ifa_addr;
            if !a.is_null() {
                let addr = match (*a).sa_family as i32 {
                    libc::AF_INET => {
                        let s = &*(a as *const libc::sockaddr_in);
                        Some(IpAddr::from(u32::from_be(s.sin_addr.s_addr).to_be_bytes()))
                    }
                    libc::AF_INET6 => {
                        let s = &*(a as *const libc::sockaddr_in6);
                        Some(IpAddr::from(s.sin6_addr.s6_addr))
                    }
                    _ => None,
                };
                if addr == Some(ip) {
                    found = Some(CStr::from_ptr((*p).ifa_name).to_string_lossy().into_owned());
                    break;
                }
            }
            p = (*p).ifa_next;
        }
        libc::freeifaddrs(head);
    }
    found
}

/// The driver of interface `name` from the kernel's ethtool interface (SIOCETHTOOL,
/// ETHTOOL_GDRVINFO): works for virtual devices (veth, bridge) that have no sysfs device link.
pub fn ethtool_driver(name: &str) -> Option<String> {
    #[repr(C)]
    struct IfReq {
        name: [libc::c_char; libc::IFNAMSIZ],
        data: *mut libc::c_void,
        _pad: [u8; 16],
    }
    const SIOCETHTOOL: libc::c_ulong = 0x8946;
    const ETHTOOL_GDRVINFO: u32 = 0x3;
    if name.len() >= libc::IFNAMSIZ {
        return None;
    }
    // struct ethtool_drvinfo: cmd, then driver[32], version[32], fw_version[32], bus_info[32], ...
    let mut info = [0u8; 196];
    info[..4].copy_from_slice(&ETHTOOL_GDRVINFO.to_ne_bytes());
    let mut req = IfReq { name: [0; libc::IFNAMSIZ], data: info.as_mut_ptr() as *mut libc::c_void, _pad: [0; 16] };
    for (d, s) in req.name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: a datagram socket only used for this ioctl; `req` points at `info`, both live
    // across the call and sized as the kernel expects.
    let ok = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return None;
        }
        let r = libc::ioctl(fd, SIOCETHTOOL as _, &mut req as *mut IfReq);
        libc::close(fd);
        r == 0
    };
    if !ok {
        return None;
    }
    let d = &info[4..36];
    let end = d.iter().position(|&b| b == 0).unwrap_or(d.len());
    Some(String::from_utf8_lossy(&d[..end]).into_owned()).filter(|s| !s.is_empty())
}

/// Facts about this host; `local_ip` (the address traffic uses here) picks the interface.
pub fn facts(local_ip: Option<IpAddr>) -> HostFacts {
    let interface = local_ip.and_then(interface_of);
    let (driver, speed_mbps) = match &interface {
        Some(i) => (
            std::fs::read_link(format!("/sys/class/net/{i}/device/driver"))
                .ok()
                .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
                .or_else(|| if i == "lo" { Some("loopback".into()) } else { ethtool_driver(i) }),
            read_trim(&format!("/sys/class/net/{i}/speed")).and_then(|s| s.parse::<i64>().ok()).filter(|&s| s > 0).map(|s| s as u64),
        ),
        None => (None, None),
    };
    HostFacts {
        hostname: read_trim("/proc/sys/kernel/hostname").unwrap_or_default(),
        kernel: read_trim("/proc/sys/kernel/osrelease").unwrap_or_default(),
        cpu: cpu_model(),
        cpus: crate::cpu::cpus(),
        interface,
        driver,
        speed_mbps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_facts() {
        let f = facts(Some("127.0.0.1".parse().unwrap()));
        assert_eq!(f.interface.as_deref(), Some("lo"));
        assert_eq!(f.driver.as_deref(), Some("loopback"));
        assert!(!f.kernel.is_empty() && f.cpus >= 1);
        assert_eq!(interface_of("192.0.2.77".parse().unwrap()), None);
    }
}
