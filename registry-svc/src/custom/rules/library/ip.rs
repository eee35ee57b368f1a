//! Kubernetes' IP library (`library/ip.go`): `ip(s)`, a `net.IP`, `isIP(s)`,
//! `ip.isCanonical(s)`, `string(ip)` and the members `family`, `isUnspecified`, `isLoopback`,
//! `isLinkLocalMulticast`, `isLinkLocalUnicast`, `isGlobalUnicast`.
//!
//! Addresses are what Go's `netip.ParseAddr` accepts (dotted quads without leading zeros,
//! IPv6 in any of its notations), less what upstream refuses: zones (`fe80::1%eth0`) and
//! IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`). IPv4 mistakes are reported in Go's words;
//! an IPv6 address that does not parse is reported without Go's detail.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::{
    DeclarationError, Env, ExecutionError,
    common::types::{CelBool, CelInt, CelString},
};

use super::{add_type, opaque_type};

/// An IP address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ip(pub(crate) IpAddr);

opaque_type!(Ip, "net.IP");

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    add_type::<Ip>(env)?;
    cel::add_overload!(env, fn ip: (CelString<'_>) -> Result<Ip>)?;
    cel::add_overload!(env, fn is_ip: (CelString<'_>) -> CelBool, name = "isIP")?;
    cel::add_overload!(env, fn is_canonical: (CelString<'_>) -> Result<CelBool>, name = "ip.isCanonical")?;
    cel::add_overload!(env, fn to_string: (Ip) -> CelString<'_>, name = "string")?;
    cel::add_member_overload!(env, fn family: (Ip) -> CelInt)?;
    cel::add_member_overload!(env, fn is_unspecified: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_loopback: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_link_local_multicast: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_link_local_unicast: (Ip) -> CelBool)?;
    cel::add_member_overload!(env, fn is_global_unicast: (Ip) -> CelBool)?;
    Ok(())
}

/// Go's `netip.ParseAddr`: the address and whether it had a zone; Go's message otherwise.
pub(crate) fn go_parse_addr(s: &str) -> Result<(IpAddr, bool), String> {
    let error = |msg: &str, at: &str| {
        if at.is_empty() {
            format!("ParseAddr({s:?}): {msg}")
        } else {
            format!("ParseAddr({s:?}): {msg} (at {at:?})")
        }
    };
    match s.bytes().find(|b| matches!(b, b'.' | b':' | b'%')) {
        Some(b'.') => parse_v4(s)
            .map(|a| (IpAddr::V4(a), false))
            .map_err(|(msg, at)| error(msg, at)),
        Some(b':') => {
            let (addr, zone) = match s.split_once('%') {
                Some((a, z)) => (a, Some(z)),
                None => (s, None),
            };
            if zone == Some("") {
                return Err(error("zone must be a non-empty string", ""));
            }
            addr.parse::<Ipv6Addr>()
                .map(|a| (IpAddr::V6(a), zone.is_some()))
                .map_err(|_| error("unable to parse IPv6 address", ""))
        }
        Some(_) => Err(error("missing IPv6 address", "")),
        None => Err(error("unable to parse IP", "")),
    }
}

/// Go's `parseIPv4`: four decimal fields of at most 255, without leading zeros.
fn parse_v4(s: &str) -> Result<Ipv4Addr, (&'static str, &str)> {
    let b = s.as_bytes();
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0usize);
    for (i, &c) in b.iter().enumerate() {
        if c.is_ascii_digit() {
            if digits == 1 && val == 0 {
                return Err(("IPv4 field has octet with leading zero", ""));
            }
            val = val * 10 + u32::from(c - b'0');
            digits += 1;
            if val > 255 {
                return Err(("IPv4 field has value >255", ""));
            }
        } else if c == b'.' {
            if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                return Err(("IPv4 field must have at least one digit", &s[i..]));
            }
            if pos == 3 {
                return Err(("IPv4 address too long", ""));
            }
            fields[pos] = val as u8;
            pos += 1;
            val = 0;
            digits = 0;
        } else {
            return Err(("unexpected character", &s[i..]));
        }
    }
    if pos < 3 {
        return Err(("IPv4 address too short", ""));
    }
    fields[3] = val as u8;
    Ok(Ipv4Addr::from(fields))
}

/// Whether `a` is an IPv4-mapped IPv6 address (Go's `Is4In6`).
pub(crate) fn is_4in6(a: &IpAddr) -> bool {
    matches!(a, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// `raw` as `ip()` accepts it; upstream's message otherwise.
pub(crate) fn parse(raw: &str) -> Result<IpAddr, String> {
    let (addr, zone) = go_parse_addr(raw).map_err(|e| {
        format!("IP Address {raw:?} parse error during conversion from string: {e}")
    })?;
    if zone {
        return Err(format!("IP address {raw:?} with zone value is not allowed"));
    }
    if is_4in6(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(addr)
}

fn ip(s: &CelString<'_>) -> Result<Ip, ExecutionError> {
    parse(s.inner())
        .map(Ip)
        .map_err(|e| ExecutionError::function_error("ip", e))
}

fn is_ip(s: &CelString<'_>) -> CelBool {
    CelBool::from(parse(s.inner()).is_ok())
}

fn is_canonical(s: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let addr = parse(s.inner()).map_err(|e| ExecutionError::function_error("ip.isCanonical", e))?;
    Ok(CelBool::from(addr.to_string() == s.inner()))
}

fn to_string(ip: &Ip) -> CelString<'static> {
    CelString::from(ip.0.to_string())
}

fn family(ip: &Ip) -> CelInt {
    CelInt::from(if ip.0.is_ipv4() { 4 } else { 6 })
}

fn is_unspecified(ip: &Ip) -> CelBool {
    CelBool::from(ip.0.is_unspecified())
}

fn is_loopback(ip: &Ip) -> CelBool {
    CelBool::from(ip.0.is_loopback())
}

/// 224.0.0.0/24 and ff02::/16 (Go's `IsLinkLocalMulticast`).
pub(crate) fn link_local_multicast(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

/// 169.254.0.0/16 and fe80::/10 (Go's `IsLinkLocalUnicast`).
pub(crate) fn link_local_unicast(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_multicast(ip: &Ip) -> CelBool {
    CelBool::from(link_local_multicast(&ip.0))
}

fn is_link_local_unicast(ip: &Ip) -> CelBool {
    CelBool::from(link_local_unicast(&ip.0))
}

/// Go's `IsGlobalUnicast`: neither unspecified, the IPv4 broadcast address, loopback,
/// multicast nor link-local unicast (private addresses are global unicast).
fn is_global_unicast(ip: &Ip) -> CelBool {
    let a = ip.0;
    let broadcast = a == IpAddr::V4(Ipv4Addr::BROADCAST);
    CelBool::from(
        !(a.is_unspecified()
            || broadcast
            || a.is_loopback()
            || a.is_multicast()
            || link_local_unicast(&a)),
    )
}
