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

use std::collections::HashMap;

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
    let mut tally = Some(Tally::default());
    walk(msg, 0, &mut tally);
    let (heaviest, n) = tally.map(|t| t.heaviest()).unwrap_or_default();
    Err(format!(
        "the request would decode into {total} elements, {n} of them at {}; a request of {} bytes may hold at most {limit}",
        name(&heaviest),
        msg.len()
    ))
}

/// Per-path counts, for the refusal's message: a tree of the field paths met, each node found
/// from its parent and field number in one hash lookup, so counting costs the same for every
/// element however many distinct paths there are (a list searched per element made 126 KB of
/// distinct empty fields cost 4.6 s, four times as long per doubling).
#[derive(Default)]
struct Tally {
    /// The nodes: index 0 is the root (the request itself).
    nodes: Vec<Node>,
    /// A node's index by its parent's index and its field number.
    children: HashMap<Edge, usize>,
    /// The nodes of the payloads being walked, innermost last (empty: the root).
    stack: Vec<usize>,
}

/// One field path: where it hangs and how many well-formed messages were found at it.
struct Node {
    parent: usize,
    number: u32,
    count: usize,
}

/// A node's place in the tree: its parent's index and its field number.
#[derive(Clone, Copy, Eq)]
struct Edge {
    parent: usize,
    number: u32,
}

impl std::hash::Hash for Edge {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.parent.hash(state);
        self.number.hash(state);
    }
}

impl PartialEq for Edge {
    fn eq(&self, other: &Self) -> bool {
        // The unit tests count comparisons: the work of finding a path's node.
        #[cfg(test)]
        tests::COMPARISONS.with(|c| c.set(c.get() + 1));
        self.parent == other.parent && self.number == other.number
    }
}

impl Tally {
    /// Enters field `number` of the payload being walked.
    fn enter(&mut self, number: u32) {
        if self.nodes.is_empty() {
            self.nodes.push(Node {
                parent: 0,
                number: 0,
                count: 0,
            });
        }
        let parent = self.stack.last().copied().unwrap_or(0);
        let next = self.nodes.len();
        let node = *self.children.entry(Edge { parent, number }).or_insert(next);
        if node == next {
            self.nodes.push(Node {
                parent,
                number,
                count: 0,
            });
        }
        self.stack.push(node);
    }

    /// Counts one well-formed message at the field entered last.
    fn count(&mut self) {
        if let Some(&node) = self.stack.last() {
            self.nodes[node].count += 1;
        }
    }

    /// Leaves the field entered last.
    fn leave(&mut self) {
        self.stack.pop();
    }

    /// The path holding the most elements, and how many.
    fn heaviest(&self) -> (Vec<u32>, usize) {
        let Some((mut at, n)) = self
            .nodes
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, node)| (i, node.count))
            .max_by_key(|&(_, n)| n)
        else {
            return (Vec::new(), 0);
        };
        let mut path = Vec::new();
        while at != 0 {
            path.push(self.nodes[at].number);
            at = self.nodes[at].parent;
        }
        path.reverse();
        (path, n)
    }
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
fn walk(buf: &[u8], depth: usize, tally: &mut Option<Tally>) -> Option<usize> {
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
                        t.enter(number);
                    }
                    if let Some(inner) = walk(payload, depth + 1, tally) {
                        total += 1 + inner;
                        if let Some(t) = tally.as_mut() {
                            t.count();
                        }
                    }
                    if let Some(t) = tally.as_mut() {
                        t.leave();
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

    thread_local! {
        /// Comparisons of two paths' keys on this thread (see `Edge`'s `PartialEq`).
        pub(super) static COMPARISONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }

    /// A message of `n` empty embedded messages, each in a field of its own number: as many
    /// distinct paths as elements, the refusal path's worst case.
    fn distinct_empty_fields(n: u32) -> Vec<u8> {
        let mut buf = Vec::new();
        for number in 1..=n {
            prost::encoding::encode_key(
                number,
                prost::encoding::WireType::LengthDelimited,
                &mut buf,
            );
            buf.push(0);
        }
        buf
    }

    /// The comparisons `check` makes to refuse `msg`.
    fn comparisons(msg: &[u8]) -> u64 {
        COMPARISONS.with(|c| c.set(0));
        let e = check(msg).expect_err("over the bound");
        assert!(e.contains("field "), "{e}");
        COMPARISONS.with(std::cell::Cell::get)
    }

    #[test]
    fn refusing_distinct_fields_costs_work_linear_in_their_number() {
        // A list searched per element compared n²/2 paths: 200 million at 20,000 fields.
        let n = 20_000;
        let small = comparisons(&distinct_empty_fields(n));
        let large = comparisons(&distinct_empty_fields(4 * n));
        assert!(
            small <= u64::from(2 * n),
            "{small} comparisons for {n} distinct fields"
        );
        assert!(
            large <= u64::from(8 * n),
            "{large} comparisons for {} distinct fields",
            4 * n
        );
        // The message still names the heaviest path (all weigh one: the last one met).
        let e = check(&distinct_empty_fields(n)).expect_err("refused");
        assert!(e.contains(&format!("1 of them at field {n};")), "{e}");
    }

    #[test]
    fn the_heaviest_nested_path_is_named_by_its_numbers() {
        // Field 7 holds 3,000 messages, each holding two empty messages in its field 2: 7.2
        // weighs 6,000, 7 itself 3,000.
        let mut buf = Vec::new();
        for _ in 0..3000 {
            let inner = [0x12, 0x00, 0x12, 0x00]; // field 2, empty; twice
            prost::encoding::encode_key(7, prost::encoding::WireType::LengthDelimited, &mut buf);
            buf.push(inner.len() as u8);
            buf.extend_from_slice(&inner);
        }
        let e = check(&buf).expect_err("9,000 elements in 18,000 bytes");
        assert!(e.contains("6000 of them at field 7.2;"), "{e}");
    }

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
            binary_data: Default::default(),
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
