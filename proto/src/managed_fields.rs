//! `metadata.managedFields[].fieldsV1` between its two JSON forms: Kubernetes JSON holds the
//! field set as a JSON object (`{"f:data":{"f:key":{}}}`), `meta.v1.ManagedFieldsEntry` as
//! JSON text, and so does its proto3 JSON mapping (the pbjson serde impls). Code that reads
//! or writes ObjectMeta through serde from or to Kubernetes JSON passes the metadata object
//! through here (the registry's descriptor-driven codec converts by itself).

use serde_json::{Map, Value};

/// Each entry's `fieldsV1` object as text, for ObjectMeta's serde impls to read.
pub fn fields_v1_as_text(metadata: &mut Map<String, Value>) {
    for e in entries(metadata) {
        if let Some(v) = e.get("fieldsV1").filter(|v| !v.is_string() && !v.is_null()) {
            let text = v.to_string();
            e.insert("fieldsV1".into(), Value::String(text));
        }
    }
}

/// Each entry's `fieldsV1` text as the JSON object it holds, as Kubernetes writes it.
pub fn fields_v1_as_json(metadata: &mut Map<String, Value>) {
    for e in entries(metadata) {
        if let Some(Value::String(text)) = e.get("fieldsV1")
            && let Ok(v) = serde_json::from_str::<Value>(text)
        {
            e.insert("fieldsV1".into(), v);
        }
    }
}

fn entries(metadata: &mut Map<String, Value>) -> impl Iterator<Item = &mut Map<String, Value>> {
    metadata
        .get_mut("managedFields")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_ways_and_objectmeta_reads_the_text() {
        let mut m = json!({"name": "x", "managedFields": [{"manager": "m", "operation": "Apply",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}]});
        let obj = m.as_object_mut().expect("object");
        fields_v1_as_text(obj);
        let meta: crate::meta::v1::ObjectMeta =
            serde_json::from_value(Value::Object(obj.clone())).expect("parses");
        assert_eq!(meta.managed_fields[0].fields_v1, r#"{"f:data":{"f:k":{}}}"#);
        fields_v1_as_json(obj);
        assert_eq!(
            obj["managedFields"][0]["fieldsV1"],
            json!({"f:data": {"f:k": {}}})
        );
    }
}
