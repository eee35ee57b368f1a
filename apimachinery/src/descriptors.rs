//! An index of the protos' message descriptors, read once from an encoded
//! `FileDescriptorSet` (the one registry-svc serves for reflection): what the Kubernetes JSON
//! codec (`json`) and the strategic merge patch (`patch::strategic`) walk instead of per-kind
//! code. Every kind, present or future, is covered by its `.proto` alone.

use std::{collections::HashMap, sync::Arc};

use prost::Message;
use prost_types::{
    DescriptorProto, EnumDescriptorProto, FileDescriptorSet,
    field_descriptor_proto::{Label, Type},
};

/// The type of a field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// `double`.
    Double,
    /// `float`.
    Float,
    /// `int64`.
    Int64,
    /// `uint64`.
    Uint64,
    /// `int32`.
    Int32,
    /// `uint32`.
    Uint32,
    /// `fixed64`.
    Fixed64,
    /// `fixed32`.
    Fixed32,
    /// `sfixed32`.
    Sfixed32,
    /// `sfixed64`.
    Sfixed64,
    /// `sint32`.
    Sint32,
    /// `sint64`.
    Sint64,
    /// `bool`.
    Bool,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// An enum, by full name (`.meta.v1.WatchEventType`).
    Enum(String),
    /// A message, by full name (`.core.v1.PodSpec`); map fields are repeated entries.
    Message(String),
}

/// One field of a message.
#[derive(Debug, Clone)]
pub struct FieldDesc {
    /// Field number.
    pub number: u32,
    /// The proto name (`node_name`).
    pub name: String,
    /// The JSON name (`nodeName`): the Kubernetes field name.
    pub json_name: String,
    /// Its type.
    pub ty: FieldType,
    /// `repeated` (maps included).
    pub repeated: bool,
    /// Whether presence is explicit (proto3 `optional`): a zero value set is still sent.
    pub explicit_presence: bool,
    /// Full name of the field (`.core.v1.PodSpec.containers`): what the rules of `rules` key on.
    pub full_name: String,
    /// Upstream's tags for it (`rules`).
    pub rule: crate::rules::FieldRule,
}

/// One message type.
#[derive(Debug)]
pub struct MessageDesc {
    /// Full name, `.core.v1.Pod`.
    pub full_name: String,
    /// Its fields, in field-number order.
    pub fields: Vec<FieldDesc>,
    /// Whether it is a map's entry (`key` = 1, `value` = 2).
    pub map_entry: bool,
    by_number: HashMap<u32, usize>,
    by_json: HashMap<String, usize>,
}

impl MessageDesc {
    /// The field numbered `n`.
    pub fn field(&self, n: u32) -> Option<&FieldDesc> {
        self.by_number.get(&n).map(|i| &self.fields[*i])
    }

    /// The field whose JSON name is `name`.
    pub fn field_by_json(&self, name: &str) -> Option<&FieldDesc> {
        self.by_json.get(name).map(|i| &self.fields[*i])
    }

    /// The position of field `n` in [`Self::fields`].
    pub fn position(&self, n: u32) -> Option<usize> {
        self.by_number.get(&n).copied()
    }
}

/// One enum type: value numbers to names.
#[derive(Debug)]
pub struct EnumDesc {
    /// Full name.
    pub full_name: String,
    /// Values by number.
    pub values: HashMap<i32, String>,
    /// Numbers by name.
    pub numbers: HashMap<String, i32>,
}

/// Every message and enum of a descriptor set.
#[derive(Debug, Default)]
pub struct Descriptors {
    messages: HashMap<String, Arc<MessageDesc>>,
    enums: HashMap<String, Arc<EnumDesc>>,
}

/// A descriptor set that does not decode.
#[derive(Debug, thiserror::Error)]
#[error("file descriptor set does not decode: {0}")]
pub struct DescriptorError(#[from] prost::DecodeError);

impl Descriptors {
    /// Indexes an encoded `FileDescriptorSet`; several sets may be merged with [`Self::add`].
    pub fn from_set(encoded: &[u8]) -> Result<Self, DescriptorError> {
        let mut d = Self::default();
        d.add(encoded)?;
        Ok(d)
    }

    /// Adds the messages and enums of another encoded set.
    pub fn add(&mut self, encoded: &[u8]) -> Result<(), DescriptorError> {
        let set = FileDescriptorSet::decode(encoded)?;
        for file in set.file {
            let prefix = match file.package() {
                "" => String::new(),
                p => format!(".{p}"),
            };
            // An empty `syntax` is proto2, as protoc writes it.
            let proto2 = matches!(file.syntax(), "" | "proto2");
            for m in &file.message_type {
                self.message(&prefix, m, proto2);
            }
            for e in &file.enum_type {
                self.enumeration(&prefix, e);
            }
        }
        Ok(())
    }

    fn enumeration(&mut self, prefix: &str, e: &EnumDescriptorProto) {
        let full_name = format!("{prefix}.{}", e.name());
        let values: HashMap<i32, String> = e
            .value
            .iter()
            .map(|v| (v.number(), v.name().to_string()))
            .collect();
        let numbers = values.iter().map(|(n, s)| (s.clone(), *n)).collect();
        self.enums.insert(
            full_name.clone(),
            Arc::new(EnumDesc {
                full_name,
                values,
                numbers,
            }),
        );
    }

    fn message(&mut self, prefix: &str, m: &DescriptorProto, proto2: bool) {
        let full_name = format!("{prefix}.{}", m.name());
        for nested in &m.nested_type {
            self.message(&full_name, nested, proto2);
        }
        for e in &m.enum_type {
            self.enumeration(&full_name, e);
        }
        let mut fields: Vec<FieldDesc> = m
            .field
            .iter()
            .filter_map(|f| {
                let ty = match f.r#type() {
                    Type::Double => FieldType::Double,
                    Type::Float => FieldType::Float,
                    Type::Int64 => FieldType::Int64,
                    Type::Uint64 => FieldType::Uint64,
                    Type::Int32 => FieldType::Int32,
                    Type::Fixed64 => FieldType::Fixed64,
                    Type::Fixed32 => FieldType::Fixed32,
                    Type::Bool => FieldType::Bool,
                    Type::String => FieldType::String,
                    Type::Bytes => FieldType::Bytes,
                    Type::Uint32 => FieldType::Uint32,
                    Type::Sfixed32 => FieldType::Sfixed32,
                    Type::Sfixed64 => FieldType::Sfixed64,
                    Type::Sint32 => FieldType::Sint32,
                    Type::Sint64 => FieldType::Sint64,
                    Type::Enum => FieldType::Enum(f.type_name().to_string()),
                    Type::Message => FieldType::Message(f.type_name().to_string()),
                    // Groups are proto2-only and unused here.
                    Type::Group => return None,
                };
                let number = u32::try_from(f.number()).ok()?;
                let json_name = match f.json_name() {
                    "" => camel(f.name()),
                    j => j.to_string(),
                };
                let field_name = format!("{full_name}.{}", f.name());
                let explicit_presence = f.proto3_optional()
                    || (proto2 && f.label() == Label::Optional && presence_in_proto2(&ty));
                Some(FieldDesc {
                    number,
                    rule: crate::rules::rule(&field_name),
                    full_name: field_name,
                    name: f.name().to_string(),
                    json_name,
                    ty,
                    repeated: f.label() == Label::Repeated,
                    explicit_presence,
                })
            })
            .collect();
        fields.sort_by_key(|f| f.number);
        let by_number = fields
            .iter()
            .enumerate()
            .map(|(i, f)| (f.number, i))
            .collect();
        let by_json = fields
            .iter()
            .enumerate()
            .map(|(i, f)| (f.json_name.clone(), i))
            .collect();
        let map_entry = m.options.as_ref().is_some_and(|o| o.map_entry());
        self.messages.insert(
            full_name.clone(),
            Arc::new(MessageDesc {
                full_name,
                fields,
                map_entry,
                by_number,
                by_json,
            }),
        );
    }

    /// The message `full_name` (`.core.v1.Pod`).
    pub fn message_desc(&self, full_name: &str) -> Option<&Arc<MessageDesc>> {
        self.messages.get(full_name)
    }

    /// The enum `full_name`.
    pub fn enum_desc(&self, full_name: &str) -> Option<&Arc<EnumDesc>> {
        self.enums.get(full_name)
    }

    /// Every message's full name.
    pub fn message_names(&self) -> impl Iterator<Item = &str> {
        self.messages.keys().map(String::as_str)
    }
}

/// protoc's default JSON name: `node_name` -> `nodeName`.
fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a proto2 `optional` field of this type keeps a zero value that is on the wire:
/// Kubernetes' own protobuf (`proto/k8s`, proto2) carries `false` and `0` that mean something
/// (`enableServiceLinks: false`, `terminationGracePeriodSeconds: 0`, `immutable: false`), which
/// implicit presence would drop and defaulting would then turn into `true` or 30. Strings are
/// left implicit: Go writes every string field that is not a pointer, empty or not, and an
/// empty string means "unset" in every kubestore string field (and `serviceAccount`, which
/// kubestore does not model, would otherwise come out as an unknown field of every Pod).
/// Messages are present whenever they are on the wire already.
fn presence_in_proto2(ty: &FieldType) -> bool {
    !matches!(
        ty,
        FieldType::String | FieldType::Bytes | FieldType::Message(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registrys_descriptors_are_indexed_with_kubernetes_names() {
        let d = Descriptors::from_set(kubestore_proto::CORE_DESCRIPTOR_SET).expect("decodes");
        let spec = d.message_desc(".core.v1.PodSpec").expect("PodSpec");
        let f = spec.field(3).expect("field 3");
        assert_eq!(f.json_name, "terminationGracePeriodSeconds");
        assert_eq!(f.ty, FieldType::Int64);
        assert!(f.explicit_presence);
        let containers = spec.field_by_json("containers").expect("containers");
        assert!(containers.repeated);
        assert_eq!(
            containers.ty,
            FieldType::Message(".core.v1.Container".into())
        );
        let meta = d.message_desc(".meta.v1.ObjectMeta").expect("ObjectMeta");
        let labels = meta.field_by_json("labels").expect("labels");
        let FieldType::Message(entry) = &labels.ty else {
            panic!("a map is a repeated entry message")
        };
        assert!(d.message_desc(entry).expect("entry").map_entry);
        assert_eq!(camel("a_b_c"), "aBC");
    }
}
