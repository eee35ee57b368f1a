//! cel-go's sets extension (`ext.Sets`, in Kubernetes' base environment since 1.29), on lists
//! taken as sets: `sets.contains(a, b)`, whether every item of `b` is in `a`;
//! `sets.equivalent(a, b)`, whether each contains the other; `sets.intersects(a, b)`, whether
//! they share an item. Items compare as `==` does (`1 == 1.0`).

use cel::{
    DeclarationError, Env, ExecutionError,
    common::{
        types::{CelBool, LIST_TYPE},
        value::{CowVal, Val},
    },
};

use super::lists::items;

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    let both = || vec![LIST_TYPE, LIST_TYPE];
    env.add_overload("sets.contains", "list_sets_contains_list", both(), contains)?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        both(),
        equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        both(),
        intersects,
    )?;
    Ok(())
}

/// The items of both lists.
#[allow(clippy::type_complexity)]
fn operands<'a, 'v>(
    args: &'a [CowVal<'_, 'v>],
) -> Result<(Vec<&'a (dyn Val + 'v)>, Vec<&'a (dyn Val + 'v)>), ExecutionError> {
    let [a, b] = args else {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    };
    Ok((items(a.as_ref())?, items(b.as_ref())?))
}

/// Whether every item of `b` is in `a`.
fn all_in<'a, 'v>(a: &[&'a (dyn Val + 'v)], b: &[&'a (dyn Val + 'v)]) -> bool {
    b.iter().all(|x| a.iter().any(|y| y.equals(*x)))
}

fn contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = operands(&args)?;
    Ok(CowVal::owned(CelBool::from(all_in(&a, &b))))
}

fn equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = operands(&args)?;
    Ok(CowVal::owned(CelBool::from(
        all_in(&a, &b) && all_in(&b, &a),
    )))
}

fn intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = operands(&args)?;
    Ok(CowVal::owned(CelBool::from(
        b.iter().any(|x| a.iter().any(|y| y.equals(*x))),
    )))
}
