//! Kubernetes' regex library (`library/regex.go`): `s.find(re)`, the first match of `re` in
//! `s` (or ""), and `s.findAll(re[, n])`, the matches (at most `n` of them when `n` is not
//! negative).
//!
//! Patterns are Go's syntax, compiled through `custom::pattern` (Go's meaning, and its bound
//! on a program's size). The last [`CACHED`] patterns compiled on a thread are kept: a rule
//! runs on one thread, so a pattern used item after item is compiled once per evaluation at
//! most, and the bound charged for a pattern known only when the rule runs includes its
//! compilation (`cost::calls`).

use std::{cell::RefCell, collections::VecDeque, sync::Arc};

use cel::{
    DeclarationError, Env, ExecutionError,
    common::{
        types::{CelInt, CelList, CelString},
        value::Val,
    },
};

/// Patterns kept per thread.
const CACHED: usize = 16;

thread_local! {
    static PATTERNS: RefCell<VecDeque<(String, Arc<regex::Regex>)>> =
        const { RefCell::new(VecDeque::new()) };
}

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    cel::add_member_overload!(env, fn find: (CelString<'_>, CelString<'_>) -> Result<CelString<'_>>)?;
    cel::add_member_overload!(env, fn find_all: (CelString<'_>, CelString<'_>) -> Result<CelList<'_>>)?;
    cel::add_member_overload!(
        env,
        fn find_all_n: (CelString<'_>, CelString<'_>, CelInt) -> Result<CelList<'_>>,
        name = "findAll"
    )?;
    Ok(())
}

/// `pattern` compiled, from the thread's cache if it is there.
fn compiled(function: &str, pattern: &str) -> Result<Arc<regex::Regex>, ExecutionError> {
    let hit = PATTERNS.with(|cache| {
        let mut cache = cache.borrow_mut();
        let i = cache.iter().position(|(p, _)| p == pattern)?;
        let entry = cache.remove(i)?;
        let re = entry.1.clone();
        cache.push_back(entry);
        Some(re)
    });
    if let Some(re) = hit {
        return Ok(re);
    }
    let re =
        Arc::new(crate::custom::pattern::compile(pattern).map_err(|e| {
            ExecutionError::function_error(function, format!("Illegal regex: {e}"))
        })?);
    PATTERNS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= CACHED {
            cache.pop_front();
        }
        cache.push_back((pattern.to_string(), re.clone()));
    });
    Ok(re)
}

fn find(s: &CelString<'_>, pattern: &CelString<'_>) -> Result<CelString<'static>, ExecutionError> {
    let re = compiled("find", pattern.inner())?;
    Ok(CelString::from(
        re.find(s.inner()).map_or("", |m| m.as_str()).to_string(),
    ))
}

fn find_all(
    s: &CelString<'_>,
    pattern: &CelString<'_>,
) -> Result<CelList<'static>, ExecutionError> {
    find_all_n(s, pattern, &CelInt::from(-1))
}

fn find_all_n(
    s: &CelString<'_>,
    pattern: &CelString<'_>,
    n: &CelInt,
) -> Result<CelList<'static>, ExecutionError> {
    let re = compiled("findAll", pattern.inner())?;
    // Go's FindAllString: every match when n < 0, none when n = 0.
    let limit = usize::try_from(*n.inner()).unwrap_or(usize::MAX);
    let found: Vec<Box<dyn Val>> = re
        .find_iter(s.inner())
        .take(limit)
        .map(|m| Box::new(CelString::from(m.as_str().to_string())) as Box<dyn Val>)
        .collect();
    Ok(CelList::from(found))
}
