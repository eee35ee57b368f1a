//! Kubernetes' lists library (`library/lists.go`): `isSorted`, `sum`, `min`, `max`,
//! `indexOf`, `lastIndexOf` on lists, and `includes` (version 1).
//!
//! Upstream's type checker only accepts lists of one comparable (or summable) type; without
//! one, a list of mixed or incomparable items fails here when called, naming the types.

use std::cmp::Ordering;

use cel::{
    DeclarationError, Env, ExecutionError,
    common::{
        types::{CelBool, CelDouble, CelInt, CelUInt, DYN_TYPE, Kind, LIST_TYPE},
        value::{CowVal, Val},
    },
};

use super::types_of;

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list.isSorted()", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list.sum()", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list.min()", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list.max()", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list.indexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list.lastIndexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_member_overload(
        "includes",
        "dyn.includes(dyn)",
        DYN_TYPE,
        vec![DYN_TYPE],
        includes,
    )?;
    Ok(())
}

/// The items of a list.
pub(super) fn items<'a, 'v>(
    list: &'a (dyn Val + 'v),
) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let iterable = list
        .as_iterable()
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: list.get_type().name().to_owned(),
            want: "list".to_owned(),
        })?;
    let mut iter = iterable.iter();
    let mut out = Vec::new();
    while let Some(x) = iter.next() {
        out.push(x);
    }
    Ok(out)
}

/// The receiver and the other arguments of a call.
fn receiver<'a, 'v>(
    args: &'a [CowVal<'_, 'v>],
    n: usize,
) -> Result<&'a (dyn Val + 'v), ExecutionError> {
    match args.first() {
        Some(a) if args.len() == n => Ok(a.as_ref()),
        _ => Err(ExecutionError::invalid_argument_count(n, args.len())),
    }
}

/// `a` compared with `b`, for `function`; an error when they do not compare.
fn compare(function: &str, a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    let no_overload = || ExecutionError::no_such_overload(function, types_of(&[a, b]));
    a.as_comparer()
        .ok_or_else(no_overload)?
        .compare(b)
        .map_err(|_| no_overload())
}

/// Fails unless `x` has an order at all (upstream's `traits.Comparer`).
fn comparable(function: &str, x: &dyn Val) -> Result<(), ExecutionError> {
    match x.as_comparer() {
        Some(_) => Ok(()),
        None => Err(ExecutionError::no_such_overload(function, types_of(&[x]))),
    }
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = receiver(&args, 1)?;
    let mut previous: Option<&dyn Val> = None;
    for item in items(list)? {
        comparable("isSorted", item)?;
        if let Some(p) = previous
            && compare("isSorted", p, item)? == Ordering::Greater
        {
            return Ok(CowVal::owned(CelBool::from(false)));
        }
        previous = Some(item);
    }
    Ok(CowVal::owned(CelBool::from(true)))
}

/// A running sum of one numeric type.
enum Sum {
    Int(i64),
    UInt(u64),
    Double(f64),
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = receiver(&args, 1)?;
    let overflow = || ExecutionError::function_error("sum", "integer overflow");
    // An empty list sums to 0 (upstream gives the zero of the list's declared type; an
    // untyped empty list is taken as one of ints).
    let mut total: Option<Sum> = None;
    for item in items(list)? {
        let next = if let Some(i) = item.downcast_ref::<CelInt>() {
            match total {
                None => Sum::Int(*i.inner()),
                Some(Sum::Int(t)) => Sum::Int(t.checked_add(*i.inner()).ok_or_else(overflow)?),
                _ => return Err(ExecutionError::no_such_overload("sum", types_of(&[item]))),
            }
        } else if let Some(u) = item.downcast_ref::<CelUInt>() {
            match total {
                None => Sum::UInt(*u.inner()),
                Some(Sum::UInt(t)) => Sum::UInt(t.checked_add(*u.inner()).ok_or_else(|| {
                    ExecutionError::function_error("sum", "unsigned integer overflow")
                })?),
                _ => return Err(ExecutionError::no_such_overload("sum", types_of(&[item]))),
            }
        } else if let Some(d) = item.downcast_ref::<CelDouble>() {
            match total {
                None => Sum::Double(*d.inner()),
                Some(Sum::Double(t)) => Sum::Double(t + *d.inner()),
                _ => return Err(ExecutionError::no_such_overload("sum", types_of(&[item]))),
            }
        } else {
            return Err(ExecutionError::no_such_overload("sum", types_of(&[item])));
        };
        total = Some(next);
    }
    Ok(match total.unwrap_or(Sum::Int(0)) {
        Sum::Int(i) => CowVal::owned(CelInt::from(i)),
        Sum::UInt(u) => CowVal::owned(CelUInt::from(u)),
        Sum::Double(d) => CowVal::owned(CelDouble::from(d)),
    })
}

/// The first item of the list that no other precedes in `preferred` order.
fn extreme<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    function: &str,
    preferred: Ordering,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = receiver(&args, 1)?;
    let mut best: Option<&(dyn Val + 'v)> = None;
    for item in items(list)? {
        comparable(function, item)?;
        best = match best {
            Some(b) if compare(function, item, b)? != preferred => Some(b),
            _ => Some(item),
        };
    }
    match best {
        Some(b) => Ok(CowVal::Owned(b.clone_as_boxed())),
        None => Err(ExecutionError::function_error(
            function,
            format!("{function} called on empty list"),
        )),
    }
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "min", Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "max", Ordering::Greater)
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = receiver(&args, 2)?;
    let needle = args[1].as_ref();
    let found = items(list)?.iter().position(|x| x.equals(needle));
    Ok(CowVal::owned(CelInt::from(found.map_or(-1, |i| i as i64))))
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = receiver(&args, 2)?;
    let needle = args[1].as_ref();
    let found = items(list)?.iter().rposition(|x| x.equals(needle));
    Ok(CowVal::owned(CelInt::from(found.map_or(-1, |i| i as i64))))
}

/// `x.includes(y)`: whether the list `x` holds `y`, or, `x` being no list, whether it is `y`.
fn includes<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let target = receiver(&args, 2)?;
    let needle = args[1].as_ref();
    let found = if target.get_type().kind() == Kind::List {
        items(target)?.iter().any(|x| x.equals(needle))
    } else {
        target.equals(needle)
    };
    Ok(CowVal::owned(CelBool::from(found)))
}
