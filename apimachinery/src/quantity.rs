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
            // Round up, without `v + div - 1`, which overflows near i128's end (a 2^67
            // mantissa times `Ei`'s 2^60).
            v = v / div + i128::from(v % div != 0);
        }
        if v > i128::from(i64::MAX) * NANO {
            return Err(format!("quantity is too large: {s:?}"));
        }
        Ok(Self(if negative { -v } else { v }))
    }

    /// The value in nano-units (what arithmetic on quantities, as CEL's, works on).
    pub fn nanos(self) -> i128 {
        self.0
    }

    /// Whether it is a whole number.
    pub fn is_integer(&self) -> bool {
        self.0 % NANO == 0
    }

    /// Whether the quantity is greater than zero.
    pub fn is_positive(&self) -> bool {
        self.0 > 0
    }

    /// Sum of two quantities.
    pub fn saturating_add(self, other: Self) -> Self {
        Self(self.0.saturating_add(other.0))
    }

    /// `s` as upstream writes it back (`Quantity.String()`, `CanonicalizeBytes`): the notation
    /// of its suffix kept, the number the shortest that says the value exactly. So `0.1` is
    /// `100m`, `2000` is `2k`, `1536Ki` is `1536Ki` but `2048Ki` is `2Mi`, `1e3` stays `1e3`;
    /// `None` when `s` is no quantity (validation says so).
    pub fn canonical(s: &str) -> Option<String> {
        Self::written(s, false)
    }

    /// `s` rounded up to a milli-unit (upstream's `SetDefaults_ResourceList`: `1n` of cpu is
    /// `1m`), then written as [`Quantity::canonical`] writes it.
    pub fn canonical_milli(s: &str) -> Option<String> {
        Self::written(s, true)
    }

    fn written(s: &str, milli: bool) -> Option<String> {
        let mut value = Self::parse(s).ok()?.0;
        if let Some(scale) = kept_scale(s)
            && (!milli || scale >= -3)
        {
            return Some(s.to_string());
        }
        if milli {
            // Away from zero, as Go's RoundUp.
            let unit = NANO / 1000;
            let rest = value % unit;
            if rest != 0 {
                value += if value > 0 { unit - rest } else { -unit - rest };
            }
        }
        Some(Self(value).written_like(s))
    }

    /// The quantity written as Go's `String()` writes a computed value (a sum) in the notation
    /// of `like` (binary, decimal exponent or decimal SI, by its suffix).
    pub fn written_like(self, like: &str) -> String {
        let value = self.0;
        if value == 0 {
            return "0".into();
        }
        let suffix = like
            .trim()
            .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '+' || c == '-');
        let binary = suffix.ends_with('i');
        let exponent = suffix.len() > 1 && suffix.starts_with(['e', 'E']);
        let sign = if value < 0 { "-" } else { "" };
        let magnitude = value.unsigned_abs();
        // BinarySI stays binary for whole numbers of at least 1024; the others (and a small or
        // fractional binary value) are written in powers of ten.
        if binary && magnitude >= 1024 * NANO as u128 && magnitude.is_multiple_of(NANO as u128) {
            let mut units = magnitude / NANO as u128;
            let mut power = 0;
            while units.is_multiple_of(1024) && power < 6 {
                units /= 1024;
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return format!("{sign}{units}{suffix}");
        }
        // mantissa × 10^e, trailing zeros moved into e, e then lowered to a multiple of 3.
        let (mut mantissa, mut e) = (magnitude, -9i32);
        while mantissa.is_multiple_of(10) {
            mantissa /= 10;
            e += 1;
        }
        while e.rem_euclid(3) != 0 {
            mantissa *= 10;
            e -= 1;
        }
        let suffix = if exponent {
            if e == 0 {
                String::new()
            } else {
                format!("e{e}")
            }
        } else {
            match e {
                -9 => "n",
                -6 => "u",
                -3 => "m",
                0 => "",
                3 => "k",
                6 => "M",
                9 => "G",
                12 => "T",
                15 => "P",
                18 => "E",
                _ => return format!("{sign}{mantissa}e{e}"),
            }
            .to_string()
        };
        format!("{sign}{mantissa}{suffix}")
    }
}

/// The scale of `s` when Go's `ParseQuantity` keeps it as written (its fast path: the string
/// is already what `String()` would write, or close enough that Go does not rewrite it), else
/// `None`. Decimal notations (`500m`, `+5`, `1.500`, `1E3`) are kept when their digits need no
/// more than 18 places, their scale is a multiple of 3 and at least nano, the digits do not end
/// in `000` and do not start with `0`; binary ones (`100Ki`) when they have no fraction and the
/// number is not a multiple of 8. `RoundUp` to milli-units keeps them too when their scale is
/// at least milli.
fn kept_scale(s: &str) -> Option<i32> {
    if s == "0" {
        return Some(0);
    }
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let digits_end = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(digits_end);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(exponent) = binary {
        let precision = 15 - int.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1;
        let value: u64 = int.parse().ok()?;
        return (frac.is_empty() && precision >= 0 && value & 7 != 0).then_some(0);
    }
    let exponent: i32 = match suffix {
        "n" => -9,
        "u" => -6,
        "m" => -3,
        "" => 0,
        "k" => 3,
        "M" => 6,
        "G" => 9,
        "T" => 12,
        "P" => 15,
        "E" => 18,
        other => other.strip_prefix(['e', 'E'])?.parse().ok()?,
    };
    let shifted = format!("{int}{frac}");
    let scale = exponent - frac.len() as i32;
    let precision = 18 - shifted.len() as i32;
    (precision >= 0
        && scale >= -9
        && scale % 3 == 0
        && !shifted.ends_with("000")
        && !shifted.starts_with('0'))
    .then_some(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn a_value_near_the_end_of_the_range_rounds_up_without_overflowing() {
        // A 2^67 - 1 mantissa with 28 decimals, times Ei's 2^60: near i128's end before the
        // division (it once overflowed there, and wrapped to a negative value in release).
        match Quantity::parse("0.0000000147573952589676412927Ei") {
            Ok(v) => assert!(v.nanos() > 0, "{v:?}"),
            Err(e) => assert!(e.contains("too large"), "{e}"),
        }
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

    /// Upstream's `TestQuantityString` and `TestQuantityParseEmit` cases of the notations
    /// clients write.
    #[test]
    fn quantities_are_written_back_as_upstream_writes_them() {
        for (given, canonical) in [
            ("0", "0"),
            ("0.0", "0"),
            ("0Mi", "0"),
            ("0.1", "100m"),
            ("1.5", "1500m"),
            ("100m", "100m"),
            ("1000m", "1"),
            ("2000", "2k"),
            ("1k", "1k"),
            ("1e3", "1e3"),
            ("1E3", "1E3"),
            ("01", "1"),
            ("1.500", "1.500"),
            ("5e0", "5e0"),
            ("+1Gi", "+1Gi"),
            ("1.5e3", "1500"),
            ("129e6", "129e6"),
            ("128974848", "128974848"),
            ("123Mi", "123Mi"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("1536Ki", "1536Ki"),
            ("2048Ki", "2Mi"),
            ("0.5Ki", "512"),
            ("512Ki", "512Ki"),
            ("100Ki", "100Ki"),
            ("1000Ki", "1000Ki"),
            ("1023", "1023"),
            ("0.1Ki", "102400m"),
            ("-1", "-1"),
            ("-100m", "-100m"),
            ("+5", "+5"),
            ("1M", "1M"),
            ("64G", "64G"),
            ("3", "3"),
            ("1n", "1n"),
            ("1.5u", "1500n"),
        ] {
            assert_eq!(
                Quantity::canonical(given).as_deref(),
                Some(canonical),
                "{given}"
            );
        }
        assert_eq!(Quantity::canonical("abc"), None);
        for (given, rounded) in [
            ("1n", "1m"),
            ("1500u", "2m"),
            ("0.1", "100m"),
            ("-1n", "-1m"),
            ("1Gi", "1Gi"),
        ] {
            assert_eq!(
                Quantity::canonical_milli(given).as_deref(),
                Some(rounded),
                "{given}"
            );
        }
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
