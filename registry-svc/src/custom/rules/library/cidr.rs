//! Kubernetes' CIDR library (`library/cidr.go`): `cidr(s)`, a `net.CIDR`, `isCIDR(s)`,
//! `string(cidr)`, and the members `containsIP` (of an IP or a string), `containsCIDR` (of a
//! CIDR or a string), `ip`, `prefixLength`, `masked`.
//!
//! A CIDR is what Go's `netip.ParsePrefix` accepts, less IPv4-mapped IPv6 addresses; its
//! address keeps its host bits (`cidr('10.0.0.1/8').ip()` is `10.0.0.1`) until `masked()`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::{
    DeclarationError, Env, ExecutionError,
    common::types::{CelBool, CelInt, CelString},
};

use super::{
    add_type,
    ip::{Ip, go_parse_addr, is_4in6},
    opaque_type,
};

/// A prefix: an address and how many of its leading bits are the network's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cidr {
    addr: IpAddr,
    bits: u8,
}

opaque_type!(Cidr, "net.CIDR");

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    add_type::<Cidr>(env)?;
    cel::add_overload!(env, fn cidr: (CelString<'_>) -> Result<Cidr>)?;
    cel::add_overload!(env, fn is_cidr: (CelString<'_>) -> CelBool, name = "isCIDR")?;
    cel::add_overload!(env, fn to_string: (Cidr) -> CelString<'_>, name = "string")?;
    cel::add_member_overload!(env, fn contains_ip: (Cidr, Ip) -> CelBool, name = "containsIP")?;
    cel::add_member_overload!(
        env,
        fn contains_ip_string: (Cidr, CelString<'_>) -> Result<CelBool>,
        name = "containsIP"
    )?;
    cel::add_member_overload!(env, fn contains_cidr: (Cidr, Cidr) -> CelBool, name = "containsCIDR")?;
    cel::add_member_overload!(
        env,
        fn contains_cidr_string: (Cidr, CelString<'_>) -> Result<CelBool>,
        name = "containsCIDR"
    )?;
    cel::add_member_overload!(env, fn ip: (Cidr) -> Ip)?;
    cel::add_member_overload!(env, fn prefix_length: (Cidr) -> CelInt)?;
    cel::add_member_overload!(env, fn masked: (Cidr) -> Cidr)?;
    Ok(())
}

/// Upstream's prefix for a CIDR that does not parse (written twice there, as here).
const PARSE_ERROR: &str = "network address parse error during conversion from string";

/// `raw` as `cidr()` accepts it; upstream's message otherwise.
pub(crate) fn parse(raw: &str) -> Result<Cidr, String> {
    let go =
        |msg: String| format!("{PARSE_ERROR}: {PARSE_ERROR}: netip.ParsePrefix({raw:?}): {msg}");
    let i = raw.rfind('/').ok_or_else(|| go("no '/'".into()))?;
    let (addr, zone) = go_parse_addr(&raw[..i]).map_err(go)?;
    if zone {
        return Err(go("IPv6 zones cannot be present in a prefix".into()));
    }
    let bits = &raw[i + 1..];
    let bad_bits = || go(format!("bad bits after slash: {bits:?}"));
    // Decimal digits only, no sign and no leading zero (Go's ParsePrefix).
    if bits.is_empty()
        || !bits.bytes().all(|b| b.is_ascii_digit())
        || (bits.len() > 1 && bits.starts_with('0'))
    {
        return Err(bad_bits());
    }
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let bits: u32 = bits.parse().map_err(|_| bad_bits())?;
    if bits > max {
        return Err(go("prefix length out of range".into()));
    }
    if is_4in6(&addr) {
        return Err(format!(
            "{PARSE_ERROR}: IPv4-mapped IPv6 address {raw:?} is not allowed"
        ));
    }
    Ok(Cidr {
        addr,
        bits: bits as u8,
    })
}

/// `a` with all but its first `bits` bits zero.
fn mask(a: IpAddr, bits: u8) -> IpAddr {
    match a {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & m))
        }
    }
}

impl Cidr {
    fn contains(&self, a: IpAddr) -> bool {
        a.is_ipv4() == self.addr.is_ipv4() && mask(a, self.bits) == mask(self.addr, self.bits)
    }
}

fn cidr(s: &CelString<'_>) -> Result<Cidr, ExecutionError> {
    parse(s.inner()).map_err(|e| ExecutionError::function_error("cidr", e))
}

fn is_cidr(s: &CelString<'_>) -> CelBool {
    CelBool::from(parse(s.inner()).is_ok())
}

fn to_string(c: &Cidr) -> CelString<'static> {
    CelString::from(format!("{}/{}", c.addr, c.bits))
}

fn contains_ip(c: &Cidr, ip: &Ip) -> CelBool {
    CelBool::from(c.contains(ip.0))
}

fn contains_ip_string(c: &Cidr, s: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let a =
        super::ip::parse(s.inner()).map_err(|e| ExecutionError::function_error("containsIP", e))?;
    Ok(CelBool::from(c.contains(a)))
}

fn contains_cidr(c: &Cidr, other: &Cidr) -> CelBool {
    CelBool::from(c.bits <= other.bits && c.contains(other.addr))
}

fn contains_cidr_string(c: &Cidr, s: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let other = parse(s.inner()).map_err(|e| ExecutionError::function_error("containsCIDR", e))?;
    Ok(contains_cidr(c, &other))
}

fn ip(c: &Cidr) -> Ip {
    Ip(c.addr)
}

fn prefix_length(c: &Cidr) -> CelInt {
    CelInt::from(i64::from(c.bits))
}

fn masked(c: &Cidr) -> Cidr {
    Cidr {
        addr: mask(c.addr, c.bits),
        bits: c.bits,
    }
}
