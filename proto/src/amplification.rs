//! A bound on what decoding a request may cost in memory, checked on its bytes before it is
//! decoded (registry-svc's requests: their objects decode into structs).
//!
//! An empty embedded message is two bytes on the wire and a struct of a hundred bytes or more
//! once decoded (an `OwnerReference` holds four strings), so a 2 MB request of a million empty
//! owner references once grew registry-svc by 226 MiB, more than 100 times its size. Here the
//! request's wire format is walked first, and every length-delimited field whose payload is
//! itself a well-formed message counts as one decoded element (strings that happen to parse
//! count too: an over-estimate, never an under-estimate). A request may hold
//! [`BASE_ELEMENTS`] elements plus one per [`BYTES_PER_ELEMENT`] bytes: real objects spend
//! more than that on every element (a label `a: "b"` is 8 bytes, and map keys are unique), while
//! the bound keeps a request's decoded size near 50 times its encoded size. A request over it
//! is INVALID_ARGUMENT (`BadRequest`) naming where its elements are.
//!
//! Measured (a counting allocator, the densest request of 768 KiB the bound accepts, glibc's
//! block sizes): 12-41x for labels, data, finalizers and containers, 52x for empty owner
//! references or containers, 64x for empty printer columns and 121x for empty definition
//! versions, the largest struct. The bound counts elements, not what each decodes into; a
//! weight per message type (from the descriptors) would even these out, and is left for later:
//! definitions are written rarely, by few clients, and the worst case is about 120 MiB per MiB of request.

/// Elements any request may hold, whatever its size.
pub const BASE_ELEMENTS: usize = 1000;
/// Encoded bytes per element allowed beyond [`BASE_ELEMENTS`].
pub const BYTES_PER_ELEMENT: usize = 6;
/// Nesting walked (deeper payloads count as plain bytes; `depth` bounds how deep messages nest).
const MAX_DEPTH: usize = 32;

/// How many elements `len` encoded bytes may decode into.
pub fn allowed(len: usize) -> usize {
    BASE_ELEMENTS + len / BYTES_PER_ELEMENT
}

/// `Ok` when `msg` decodes into no more elements than its size allows; otherwise a message
/// naming the field that holds the most.
pub fn check(msg: &[u8]) -> Result<(), String> {
    let limit = allowed(msg.len());
    let Some(total) = walk(msg, 0, &mut None) else {
        // Not a message at all: the decoder reports that.
        return Ok(());
    };
    if total <= limit {
        return Ok(());
    }
    let mut counts: Vec<(Vec<u32>, usize)> = Vec::new();
    let mut path = Vec::new();
    let mut tally = Some(Tally {
        path: &mut path,
        counts: &mut counts,
    });
    walk(msg, 0, &mut tally);
    let (heaviest, n) = counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .unwrap_or_default();
    Err(format!(
        "the request would decode into {total} elements, {n} of them at {}; a request of {} bytes may hold at most {limit}",
        name(&heaviest),
        msg.len()
    ))
}

/// Per-path counts, for the refusal's message.
struct Tally<'a> {
    path: &'a mut Vec<u32>,
    counts: &'a mut Vec<(Vec<u32>, usize)>,
}

/// A field path as users know it: ObjectMeta's repeated fields by name (field 1 of an object is
/// its metadata), anything else by field numbers.
fn name(path: &[u32]) -> String {
    if let [.., 1, last] = path {
        let field = match last {
            10 => Some("metadata.labels"),
            11 => Some("metadata.annotations"),
            12 => Some("metadata.finalizers"),
            13 => Some("metadata.ownerReferences"),
            _ => None,
        };
        if let Some(f) = field {
            return f.to_string();
        }
    }
    let numbers: Vec<String> = path.iter().map(u32::to_string).collect();
    format!("field {}", numbers.join("."))
}

fn varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The elements `buf` holds if it is a well-formed message (None otherwise).
fn walk(buf: &[u8], depth: usize, tally: &mut Option<Tally<'_>>) -> Option<usize> {
    let mut at = 0;
    let mut total = 0usize;
    while at < buf.len() {
        let key = varint(buf, &mut at)?;
        let number = u32::try_from(key >> 3).ok().filter(|n| *n != 0)?;
        match key & 7 {
            0 => {
                varint(buf, &mut at)?;
            }
            1 => at = at.checked_add(8).filter(|a| *a <= buf.len())?,
            5 => at = at.checked_add(4).filter(|a| *a <= buf.len())?,
            2 => {
                let len = usize::try_from(varint(buf, &mut at)?).ok()?;
                let end = at.checked_add(len).filter(|e| *e <= buf.len())?;
                let payload = &buf[at..end];
                at = end;
                if depth < MAX_DEPTH {
                    if let Some(t) = tally.as_mut() {
                        t.path.push(number);
                    }
                    if let Some(inner) = walk(payload, depth + 1, tally) {
                        total += 1 + inner;
                        if let Some(t) = tally.as_mut() {
                            match t.counts.iter_mut().find(|(p, _)| p == t.path) {
                                Some((_, n)) => *n += 1,
                                None => t.counts.push((t.path.clone(), 1)),
                            }
                        }
                    }
                    if let Some(t) = tally.as_mut() {
                        t.path.pop();
                    }
                }
            }
            _ => return None,
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::v1::{ConfigMap, CreateConfigMapRequest, CreatePodRequest, Pod};
    use crate::meta::v1::{ObjectMeta, OwnerReference};
    use prost::Message;

    #[test]
    fn a_million_empty_owner_references_are_refused_naming_them() {
        let pod = Pod {
            metadata: Some(ObjectMeta {
                name: "p".into(),
                owner_references: vec![OwnerReference::default(); 1_000_000],
                ..Default::default()
            }),
            ..Default::default()
        };
        let req = CreatePodRequest {
            namespace: "default".into(),
            pod: Some(pod),
            dry_run: false,
        }
        .encode_to_vec();
        let e = check(&req).expect_err("refused");
        assert!(e.contains("metadata.ownerReferences"), "{e}");
    }

    #[test]
    fn real_objects_pass() {
        let cm = ConfigMap {
            metadata: Some(ObjectMeta {
                name: "settings".into(),
                labels: (0..500)
                    .map(|i| (format!("label-{i}"), "v".to_string()))
                    .collect(),
                finalizers: (0..100).map(|i| format!("example.com/f{i}")).collect(),
                ..Default::default()
            }),
            data: (0..20_000)
                .map(|i| (format!("k{i}"), "v".to_string()))
                .collect(),
            immutable: None,
        };
        let req = CreateConfigMapRequest {
            namespace: "default".into(),
            config_map: Some(cm),
            dry_run: false,
        }
        .encode_to_vec();
        assert_eq!(check(&req), Ok(()));
        assert_eq!(check(&[]), Ok(()));
    }
}
