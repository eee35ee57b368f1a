//! Kubernetes' quantity library (`library/quantity.go`): `quantity(s)`, a
//! `kubernetes.Quantity`, `isQuantity(s)`, `sign(q)`, and the members `isGreaterThan`,
//! `isLessThan`, `compareTo`, `add` and `sub` (of a quantity or an int), `asInteger`,
//! `isInteger`, `asApproximateFloat`.
//!
//! Quantities are parsed by the project's parser (`kubestore_apimachinery::quantity`), exact
//! in nano-units: equal quantities in different notations are equal (`200M` and `0.2G`).
//! Unlike upstream's arbitrary-precision decimals, a quantity is bounded (about 9.2e18
//! units): a larger one is refused when parsed ("quantity is too large").

use std::sync::LazyLock;

use cel::{
    DeclarationError, Env, ExecutionError,
    common::types::{CelBool, CelDouble, CelInt, CelString},
};
use kubestore_apimachinery::quantity::Quantity as Parsed;

use super::{add_type, opaque_type};

const NANO: i128 = 1_000_000_000;

/// A quantity, in nano-units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quantity(i128);

opaque_type!(Quantity, "kubernetes.Quantity");

/// Upstream's syntax of a quantity: what matches it but does not parse has a bad suffix.
static SYNTAX: LazyLock<Option<regex::Regex>> =
    LazyLock::new(|| regex::Regex::new(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$").ok());

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    add_type::<Quantity>(env)?;
    cel::add_overload!(env, fn quantity: (CelString<'_>) -> Result<Quantity>)?;
    cel::add_overload!(env, fn is_quantity: (CelString<'_>) -> CelBool)?;
    cel::add_overload!(env, fn sign: (Quantity) -> CelInt)?;
    cel::add_member_overload!(env, fn is_greater_than: (Quantity, Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn is_less_than: (Quantity, Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn compare_to: (Quantity, Quantity) -> CelInt)?;
    cel::add_member_overload!(env, fn add: (Quantity, Quantity) -> Result<Quantity>)?;
    cel::add_member_overload!(env, fn add_int: (Quantity, CelInt) -> Result<Quantity>, name = "add")?;
    cel::add_member_overload!(env, fn sub: (Quantity, Quantity) -> Result<Quantity>)?;
    cel::add_member_overload!(env, fn sub_int: (Quantity, CelInt) -> Result<Quantity>, name = "sub")?;
    cel::add_member_overload!(env, fn as_integer: (Quantity) -> Result<CelInt>)?;
    cel::add_member_overload!(env, fn is_integer: (Quantity) -> CelBool)?;
    cel::add_member_overload!(env, fn as_approximate_float: (Quantity) -> CelDouble)?;
    Ok(())
}

/// `s` parsed; upstream's words for why not otherwise.
pub(crate) fn parse(s: &str) -> Result<Quantity, String> {
    match Parsed::parse(s) {
        Ok(q) => Ok(Quantity(q.nanos())),
        Err(e) => {
            let syntactic = SYNTAX.as_ref().is_some_and(|re| re.is_match(s));
            if syntactic && e.starts_with("quantities must match") {
                Err("unable to parse quantity's suffix".into())
            } else {
                Err(e)
            }
        }
    }
}

fn quantity(s: &CelString<'_>) -> Result<Quantity, ExecutionError> {
    parse(s.inner()).map_err(|e| ExecutionError::function_error("quantity", e))
}

fn is_quantity(s: &CelString<'_>) -> CelBool {
    CelBool::from(parse(s.inner()).is_ok())
}

fn sign(q: &Quantity) -> CelInt {
    CelInt::from(q.0.signum() as i64)
}

fn is_greater_than(a: &Quantity, b: &Quantity) -> CelBool {
    CelBool::from(a.0 > b.0)
}

fn is_less_than(a: &Quantity, b: &Quantity) -> CelBool {
    CelBool::from(a.0 < b.0)
}

fn compare_to(a: &Quantity, b: &Quantity) -> CelInt {
    CelInt::from(a.0.cmp(&b.0) as i64)
}

fn overflow(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "quantity overflow")
}

fn add(a: &Quantity, b: &Quantity) -> Result<Quantity, ExecutionError> {
    a.0.checked_add(b.0)
        .map(Quantity)
        .ok_or_else(|| overflow("add"))
}

fn add_int(a: &Quantity, b: &CelInt) -> Result<Quantity, ExecutionError> {
    add(a, &Quantity(i128::from(*b.inner()) * NANO))
}

fn sub(a: &Quantity, b: &Quantity) -> Result<Quantity, ExecutionError> {
    a.0.checked_sub(b.0)
        .map(Quantity)
        .ok_or_else(|| overflow("sub"))
}

fn sub_int(a: &Quantity, b: &CelInt) -> Result<Quantity, ExecutionError> {
    sub(a, &Quantity(i128::from(*b.inner()) * NANO))
}

/// The quantity as an int64 when it is a whole number that fits (upstream's `AsInt64`).
fn integer(q: &Quantity) -> Option<i64> {
    if q.0 % NANO != 0 {
        return None;
    }
    i64::try_from(q.0 / NANO).ok()
}

fn as_integer(q: &Quantity) -> Result<CelInt, ExecutionError> {
    integer(q).map(CelInt::from).ok_or_else(|| {
        ExecutionError::function_error("asInteger", "cannot convert value to integer")
    })
}

fn is_integer(q: &Quantity) -> CelBool {
    CelBool::from(integer(q).is_some())
}

fn as_approximate_float(q: &Quantity) -> CelDouble {
    CelDouble::from(q.0 as f64 / NANO as f64)
}
