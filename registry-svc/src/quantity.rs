//! Kubernetes resource quantities ("500m", "1.5", "128Mi", "1e3", "2G"), parsed exactly.
//!
//! Values are held as integers of nano-units, so that "1Gi" equals "1073741824" and "0.5" equals
//! "500m" without floating-point error; digits below a nano-unit round up, as upstream rounds
//! up to its smallest scale.

/// A parsed quantity in nano-units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity(i128);

const NANO: i128 = 1_000_000_000;

impl Quantity {
    /// Zero.
    pub const ZERO: Self = Self(0);

    /// Parses `s` as `<signed decimal number><suffix>`, suffix one of the binary (Ki Mi Gi Ti
    /// Pi Ei), decimal SI (n u m "" k M G T P E) or exponent (e3, E-2) forms.
    pub fn parse(s: &str) -> Result<Self, String> {
        let err = || {
            format!(
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {s:?}"
            )
        };
        let s = s.trim();
        let num_end = s
            .char_indices()
            .find(|(i, c)| {
                !(c.is_ascii_digit() || *c == '.' || ((*c == '+' || *c == '-') && *i == 0))
            })
            .map_or(s.len(), |(i, _)| i);
        let (num, suffix) = s.split_at(num_end);
        let (negative, digits) = match num.as_bytes().first() {
            Some(b'-') => (true, &num[1..]),
            Some(b'+') => (false, &num[1..]),
            _ => (false, num),
        };
        let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
        if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
            return Err(err());
        }
        if !int_part.bytes().all(|b| b.is_ascii_digit())
            || !frac_part.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(err());
        }
        // mantissa = int_part.frac_part, as an integer and a power-of-ten scale.
        let digits_all = format!("{int_part}{frac_part}");
        let digits_all = digits_all.trim_start_matches('0');
        if digits_all.len() > 30 {
            return Err(format!("quantity is too large: {s:?}"));
        }
        let mantissa: i128 = if digits_all.is_empty() {
            0
        } else {
            digits_all.parse().map_err(|_| err())?
        };
        let mut exp10: i32 = -(frac_part.len() as i32);
        let mut factor: i128 = 1;
        match suffix {
            "" => {}
            "Ki" => factor = 1 << 10,
            "Mi" => factor = 1 << 20,
            "Gi" => factor = 1 << 30,
            "Ti" => factor = 1 << 40,
            "Pi" => factor = 1 << 50,
            "Ei" => factor = 1 << 60,
            "n" => exp10 -= 9,
            "u" => exp10 -= 6,
            "m" => exp10 -= 3,
            "k" => exp10 += 3,
            "M" => exp10 += 6,
            "G" => exp10 += 9,
            "T" => exp10 += 12,
            "P" => exp10 += 15,
            "E" => exp10 += 18,
            other if other.starts_with(['e', 'E']) => {
                let e: i32 = other[1..].parse().map_err(|_| err())?;
                if !(-30..=30).contains(&e) {
                    return Err(format!("quantity exponent out of range: {s:?}"));
                }
                exp10 += e;
            }
            _ => return Err(err()),
        }
        // value in nano-units = mantissa * factor * 10^(exp10 + 9)
        let shift = exp10 + 9;
        let mut v = mantissa
            .checked_mul(factor)
            .ok_or_else(|| format!("quantity is too large: {s:?}"))?;
        if shift >= 0 {
            for _ in 0..shift {
                v = v
                    .checked_mul(10)
                    .ok_or_else(|| format!("quantity is too large: {s:?}"))?;
            }
        } else {
            let div = 10i128
                .checked_pow((-shift) as u32)
                .ok_or_else(|| format!("quantity is too small: {s:?}"))?;
            v = (v + div - 1) / div; // round up
        }
        if v > i128::from(i64::MAX) * NANO {
            return Err(format!("quantity is too large: {s:?}"));
        }
        Ok(Self(if negative { -v } else { v }))
    }

    /// Whether the quantity is greater than zero.
    pub fn is_positive(&self) -> bool {
        self.0 > 0
    }

    /// Sum of two quantities.
    pub fn saturating_add(self, other: Self) -> Self {
        Self(self.0.saturating_add(other.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn equal_quantities_in_different_notations_compare_equal() {
        assert_eq!(q("1Gi"), q("1073741824"));
        assert_eq!(q("500m"), q("0.5"));
        assert_eq!(q("1k"), q("1000"));
        assert_eq!(q("1e3"), q("1k"));
        assert_eq!(q("1.5Gi"), q("1536Mi"));
        assert_eq!(q("100M"), q("1e8"));
        assert!(q("1Gi") > q("1G"));
        assert!(q("1m") > q("999u"));
        assert!(!q("0").is_positive());
        assert!(!q("-1").is_positive());
        assert!(q("1n").is_positive());
    }

    #[test]
    fn malformed_quantities_are_rejected() {
        for bad in [
            "", "abc", "1.2.3", "1Zi", "--1", "1 Gi", "Mi", ".", "1e", "1e400",
        ] {
            assert!(Quantity::parse(bad).is_err(), "{bad:?}");
        }
    }
}
