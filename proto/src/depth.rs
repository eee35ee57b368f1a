//! How deeply a message nests, found on its bytes before it is decoded.
//!
//! prost decodes nested messages recursively, and stops at 100 levels unless built with
//! `no-recursion-limit` (which this crate enables). 100 was too few: a custom object travels
//! as a `google.protobuf.Struct`, three messages per JSON level (Struct, map entry, Value), so
//! objects nesting more than ~33 JSON levels, and published definitions whose schemas do
//! (cert-manager's Issuer), were refused as malformed, where upstream decodes JSON 10,000
//! levels deep. Without prost's limit, this check is what keeps a decoder's stack bounded:
//! every message our codec decodes (`codec`), in either service and either direction, is
//! walked here first, without recursion, and refused if its messages nest deeper than
//! [`MAX_NESTING`].
//!
//! The walk cannot know which length-delimited fields are messages, so it reads every
//! payload that parses as one as if it were (strings and bytes rarely do, and never deeply),
//! and counts the depth reached before a payload turns out not to parse (prost recurses into
//! a message field before it finds it malformed). Groups (wire types 3 and 4, which prost
//! skips recursively in unknown fields) count as a level each. Reading payloads as messages
//! is also what protects the decodes that follow our codec's (storage-svc reads the metadata of
//! the objects a request carries as bytes). The one exception is storage.v1's responses, which
//! registry-svc reads: storage-svc encodes them from messages that do not nest, with objects as
//! opaque bytes that registry-svc walks one by one when it decodes them ([`bounded`]), and
//! passes on unwalked when it does not (`codec::Domain::walks`). The walk reads ~1.4 GB/s (release build): 47 µs
//! for a 60 KB ConfigMap request, whose decoding takes 360 µs.

/// The deepest nesting of messages decoded: a custom object of `MAX_JSON_DEPTH` JSON levels
/// (three messages each) inside its request or response, and a definition whose schema nests
/// as deep. Decoding this deep stays far from a 2 MiB stack in a debug build (a test decodes it
/// on one).
pub const MAX_NESTING: usize = 3 * MAX_JSON_DEPTH + 24;

/// The deepest JSON a custom object may nest (its root object is level 1): serde_json, which
/// reads stored objects back, stops at 128; upstream's decoder at 10,000.
pub const MAX_JSON_DEPTH: usize = 120;

/// [`check`] at [`MAX_NESTING`], for bytes decoded outside our codec's own check: an object
/// registry-svc reads from a storage.v1 response (which the codec does not walk, see
/// `codec::Domain::walks`), a Kubernetes protobuf body of the REST API.
pub fn bounded(msg: &[u8]) -> Result<(), String> {
    check(msg, MAX_NESTING)
}

/// One message (or group) being walked.
struct Frame {
    /// End of its bytes (a group ends at its end-group key, within its parent's bytes).
    end: usize,
    /// Where the walk is.
    at: usize,
    /// The field number of the group this frame is; None for a length-delimited message.
    group: Option<u64>,
}

fn varint(buf: &[u8], at: &mut usize, end: usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        if *at >= end {
            return None;
        }
        let b = buf[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// `Err` naming the limit when `msg`'s messages nest deeper than `max` levels (the message
/// itself is level 0).
pub fn check(msg: &[u8], max: usize) -> Result<(), String> {
    // Each level takes at least the one byte of the key that opens it: a message of `max`
    // bytes or fewer cannot nest deeper, and most requests and single objects are that small
    // (this walk was ~1% of a Get's CPU; BENCHMARKS.md, "Release over release").
    if msg.len() <= max {
        return Ok(());
    }
    let mut stack = Vec::with_capacity(16);
    stack.push(Frame {
        end: msg.len(),
        at: 0,
        group: None,
    });
    loop {
        let Some(f) = stack.last_mut() else {
            return Ok(());
        };
        if f.at >= f.end {
            if f.group.is_some() {
                // A group without its end: malformed, and so is every frame up to the
                // nearest message (whose parent moves on after it).
                fail(&mut stack);
            } else {
                stack.pop();
            }
            continue;
        }
        let mut at = f.at;
        let Some(key) = varint(msg, &mut at, f.end) else {
            fail(&mut stack);
            continue;
        };
        let (number, wire) = (key >> 3, key & 7);
        let ok = match wire {
            0 => varint(msg, &mut at, f.end).is_some(),
            1 => at
                .checked_add(8)
                .filter(|e| *e <= f.end)
                .map(|e| at = e)
                .is_some(),
            5 => at
                .checked_add(4)
                .filter(|e| *e <= f.end)
                .map(|e| at = e)
                .is_some(),
            2 => match varint(msg, &mut at, f.end)
                .and_then(|len| usize::try_from(len).ok())
                .and_then(|len| at.checked_add(len))
                .filter(|e| *e <= f.end)
            {
                Some(payload_end) => {
                    let start = at;
                    f.at = payload_end;
                    if payload_end > start {
                        push(&mut stack, start, payload_end, None, max)?;
                    }
                    continue;
                }
                None => false,
            },
            3 => {
                let end = f.end;
                f.at = at;
                push(&mut stack, at, end, Some(number), max)?;
                continue;
            }
            4 if f.group == Some(number) => {
                // The group ends: its parent goes on after the end-group key.
                stack.pop();
                if let Some(parent) = stack.last_mut() {
                    parent.at = at;
                }
                continue;
            }
            _ => false,
        };
        if ok && number != 0 {
            f.at = at;
        } else {
            fail(&mut stack);
        }
    }
}

/// Enters a nested message or group, refusing it past `max` levels.
fn push(
    stack: &mut Vec<Frame>,
    at: usize,
    end: usize,
    group: Option<u64>,
    max: usize,
) -> Result<(), String> {
    // The stack holds the root (level 0): the new frame is at level `stack.len()`.
    if stack.len() > max {
        return Err(format!(
            "the message nests deeper than {max} levels (a custom object may nest {MAX_JSON_DEPTH} JSON levels)"
        ));
    }
    stack.push(Frame { end, at, group });
    Ok(())
}

/// The frame on top does not parse: it is plain bytes if it is a length-delimited payload (its
/// parent already moved past it); a group that does not parse makes its parent not parse.
fn fail(stack: &mut Vec<Frame>) {
    while let Some(f) = stack.pop() {
        if f.group.is_none() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pbjson_types::{Struct, Value, value::Kind};
    use prost::Message;

    /// A Struct `levels` JSON objects deep: `{"a": {"a": ... {"a": 1}}}`.
    fn nested(levels: usize) -> Struct {
        let mut v = Value {
            kind: Some(Kind::NumberValue(1.0)),
        };
        for _ in 0..levels {
            v = Value {
                kind: Some(Kind::StructValue(Struct {
                    fields: [("a".to_string(), v)].into(),
                })),
            };
        }
        match v.kind {
            Some(Kind::StructValue(s)) => s,
            _ => unreachable!(),
        }
    }

    /// A request holding `s` as its field 5 (a custom object's place).
    fn request(s: &Struct) -> Vec<u8> {
        let mut out = Vec::new();
        prost::encoding::message::encode(5, s, &mut out);
        out
    }

    #[test]
    fn depth_is_counted_on_the_bytes() {
        let deepest = request(&nested(MAX_JSON_DEPTH));
        assert_eq!(check(&deepest, MAX_NESTING), Ok(()));
        let e = check(&request(&nested(MAX_JSON_DEPTH + 10)), MAX_NESTING).expect_err("deeper");
        assert!(e.contains("nests deeper than"), "{e}");
        // Exactly: three levels per JSON object (Struct, map entry, Value).
        assert!(check(&request(&nested(10)), 30).is_ok());
        assert!(check(&request(&nested(10)), 29).is_err());
        // Groups count, matched or not; strings that do not parse as messages do not.
        let mut groups = Vec::new();
        for _ in 0..50 {
            prost::encoding::encode_key(7, prost::encoding::WireType::StartGroup, &mut groups);
        }
        assert!(
            check(&groups, 40).is_err(),
            "unterminated groups still nest"
        );
        assert!(
            check(b"\x0a\x03abc", 1).is_ok(),
            "a string is no deeper message"
        );
        assert!(check(&[], 0).is_ok());
    }

    /// A message no longer than the limit is not walked: one byte opens a level at the least
    /// (a start-group key), so `max + 1` bytes are the fewest that can nest too deep.
    #[test]
    fn a_message_as_short_as_the_limit_cannot_nest_past_it() {
        let start_group = [0x0b_u8; 64]; // field 1, wire type 3
        assert!(check(&start_group[..10], 10).is_ok());
        assert!(
            check(&start_group[..11], 10).is_err(),
            "11 levels in 11 bytes"
        );
        assert!(check(&start_group[..11], 11).is_ok());
    }

    /// The deepest request accepted decodes on a 2 MiB stack (a tokio worker's) in a debug
    /// build, prost recursing through every level.
    #[test]
    fn the_deepest_accepted_message_decodes_on_a_worker_stack() {
        let bytes = request(&nested(MAX_JSON_DEPTH));
        assert_eq!(check(&bytes, MAX_NESTING), Ok(()));
        #[derive(Clone, PartialEq, prost::Message)]
        struct Holder {
            #[prost(message, optional, tag = "5")]
            object: Option<Struct>,
        }
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let h = Holder::decode(&bytes[..]).expect("decodes");
                assert_eq!(request(h.object.as_ref().expect("the object")), bytes);
                drop(h);
            })
            .expect("thread")
            .join()
            .expect("no stack overflow");
    }
}
