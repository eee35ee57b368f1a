//! `meta.k8s.io/v1` Tables: what `kubectl get` prints, computed on the server as upstream's
//! printers (`pkg/printers/internalversion`) and table convertors do. registry-svc's built-in
//! kinds give their columns and cells in their strategies; a custom kind's come from its
//! `additionalPrinterColumns`; a kind with neither gets upstream's default convertor
//! (`rest.NewDefaultTableConvertor`: Name, Created At). The CLI reads the same Tables.
//!
//! Rows carry their object as `includeObject` asks: nothing, a `PartialObjectMetadata` (the
//! default, what kubectl reads the namespace column from) or the whole object.

use serde_json::{Map, Value, json};

/// What a row of a Table carries (upstream's `includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// The object's metadata, as a `PartialObjectMetadata` (upstream's default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

/// One column (upstream's `TableColumnDefinition`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Header, `Name`.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub ty: String,
    /// `name` for the name column, else "".
    pub format: String,
    /// 0: always shown; 1: `-o wide` only.
    pub priority: i32,
    /// What the column means.
    pub description: String,
}

impl Column {
    /// A column.
    pub fn new(name: &str, ty: &str, format: &str, priority: i32, description: &str) -> Self {
        Self {
            name: name.into(),
            ty: ty.into(),
            format: format.into(),
            priority,
            description: description.into(),
        }
    }

    /// The JSON of a column definition.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.ty,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// Upstream's description of a name column (`metav1.ObjectMeta`'s `name` doc).
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// Upstream's description of an age column (`creationTimestamp`'s doc).
pub const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The columns of upstream's default table convertor.
pub fn default_columns() -> Vec<Column> {
    vec![
        Column::new("Name", "string", "name", 0, NAME_DESCRIPTION),
        Column::new("Created At", "date", "", 0, AGE_DESCRIPTION),
    ]
}

/// The cells of upstream's default table convertor: the name and the creation time (RFC 3339).
pub fn default_cells(name: &str, created: Option<i64>) -> Vec<Value> {
    vec![
        json!(name),
        created.map_or(Value::Null, |s| json!(crate::time::format(s, 0))),
    ]
}

/// Seconds since the epoch, now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Upstream's `duration.HumanDuration`: how long ago, as kubectl's AGE column prints it.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    let s = seconds.max(0);
    let minutes = s / 60;
    let hours = s / 3600;
    let days = s / 86_400;
    let years = days / 365;
    if s < 120 {
        format!("{s}s")
    } else if minutes < 10 {
        match s % 60 {
            0 => format!("{minutes}m"),
            sec => format!("{minutes}m{sec}s"),
        }
    } else if hours < 3 {
        format!("{minutes}m")
    } else if hours < 8 {
        match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        match hours % 24 {
            0 => format!("{days}d"),
            h => format!("{days}d{h}h"),
        }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        match days % 365 {
            0 => format!("{years}y"),
            d => format!("{years}y{d}d"),
        }
    } else {
        format!("{years}y")
    }
}

/// Upstream's `translateTimestampSince`: the age of `timestamp` (seconds since the epoch), or
/// `<unknown>` without one.
pub fn age(timestamp: Option<i64>, now: i64) -> String {
    match timestamp {
        None | Some(0) => "<unknown>".into(),
        Some(t) => human_duration(now - t),
    }
}

/// A row: its cells and, as `include` says, its object (`object` is the full object's JSON;
/// `api_version`, its metadata and kind build the `PartialObjectMetadata`).
pub fn row(cells: Vec<Value>, include: IncludeObject, object: &Value) -> Value {
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(cells));
    match include {
        IncludeObject::None => {}
        IncludeObject::Object => {
            row.insert("object".into(), object.clone());
        }
        IncludeObject::Metadata => {
            row.insert("object".into(), partial_metadata(object));
        }
    }
    Value::Object(row)
}

/// `object` as a `meta.k8s.io/v1` `PartialObjectMetadata`: its metadata only.
pub fn partial_metadata(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// The JSON array of `columns`' definitions.
pub fn columns_json(columns: &[Column]) -> Vec<u8> {
    let defs: Vec<Value> = columns.iter().map(Column::to_json).collect();
    serde_json::to_vec(&defs).unwrap_or_else(|_| b"[]".to_vec())
}

/// A whole Table of `rows` (a Get's, or a watch event's object), with its column definitions
/// unless `no_headers`.
pub fn table(
    columns: &[Column],
    rows: Vec<Value>,
    resource_version: &str,
    no_headers: bool,
) -> Vec<u8> {
    let mut t = Map::new();
    t.insert("kind".into(), json!("Table"));
    t.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    t.insert(
        "metadata".into(),
        if resource_version.is_empty() {
            json!({})
        } else {
            json!({ "resourceVersion": resource_version })
        },
    );
    let defs: Vec<Value> = if no_headers {
        Vec::new()
    } else {
        columns.iter().map(Column::to_json).collect()
    };
    t.insert("columnDefinitions".into(), Value::Array(defs));
    t.insert("rows".into(), Value::Array(rows));
    serde_json::to_vec(&Value::Object(t)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_kubectls_age_column() {
        for (s, want) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60, "3h1m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (49 * 3600, "2d1h"),
            (8 * 86_400, "8d"),
            (730 * 86_400, "2y"),
            (731 * 86_400, "2y1d"),
            (8 * 365 * 86_400, "8y"),
        ] {
            assert_eq!(human_duration(s), want, "{s}");
        }
        assert_eq!(age(None, 10), "<unknown>");
        assert_eq!(age(Some(5), 10), "5s");
    }
}
