//! OpenAPI v2 (`/openapi/v2`), what kubectl validates with when OpenAPI v3 cannot tell it (a
//! kind the server does not serve, so that it says `no matches for kind`) and what kubectl 1.27
//! and 1.28 always read first: the same paths and schemas as the v3 documents, as one Swagger
//! 2.0 document (upstream's `/openapi/v2`), in JSON or in the protobuf form kubectl asks for
//! (gnostic's `openapi.v2.Document`, `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`:
//! kubectl accepts nothing else).
//!
//! From v3 to v2, as upstream publishes a definition's schema for v2 (`ToStructuralOpenAPIV2`):
//! references move to `#/definitions/`, a reference wrapped in `allOf` is the reference itself
//! (v2 allows no siblings beside `$ref` but a description), `nullable`, `anyOf`, `oneOf` and
//! `not` are dropped (a nullable value loses its `type`); a request body is a `body` parameter,
//! a query parameter carries its type itself.
//!
//! The protobuf encoding is gnostic's: every `x-` extension (and `default`, `enum`, `example`)
//! is a `NamedAny` whose value is the YAML text of the JSON value, a `type` is a list of one,
//! `items` a list of one schema.

use serde_json::{Map, Value, json};

/// The media type kubectl asks for (and the one upstream answers with).
pub const PROTOBUF_ACCEPT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The `Content-Type` of the protobuf answer, as upstream writes it.
pub const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// What a client may be answered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    /// gnostic's protobuf.
    Protobuf,
    /// JSON.
    Json,
}

/// The media type to answer an `Accept` header with, as upstream's handler chooses: protobuf
/// when asked for (either spelling of its name), JSON for `application/json`, `*/*` or no
/// preference; None (406) otherwise.
pub fn media(accept: &str) -> Option<Media> {
    if accept.trim().is_empty() {
        return Some(Media::Json);
    }
    for part in accept.split(',') {
        let m = part
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if m == PROTOBUF_ACCEPT || m == PROTOBUF {
            return Some(Media::Protobuf);
        }
        if matches!(m.as_str(), "application/json" | "application/*" | "*/*") {
            return Some(Media::Json);
        }
    }
    None
}

/// One Swagger 2.0 document of every group version's v3 document (`documents`: each a v3
/// document's JSON).
pub fn document<'a>(documents: impl Iterator<Item = &'a Value>, version: &str) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for doc in documents {
        if let Some(Value::Object(p)) = doc.get("paths") {
            for (path, item) in p {
                paths.insert(path.clone(), path_item(item));
            }
        }
        if let Some(Value::Object(s)) = doc.pointer("/components/schemas") {
            for (name, schema) in s {
                definitions.insert(name.clone(), schema_v2(schema));
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": paths,
        "definitions": definitions,
    })
}

/// A v3 path item's operations as v2's.
fn path_item(item: &Value) -> Value {
    let Value::Object(ops) = item else {
        return json!({});
    };
    let mut out = Map::new();
    for (method, operation) in ops {
        let Value::Object(op) = operation else {
            continue;
        };
        let content = operation
            .pointer("/requestBody/content")
            .and_then(Value::as_object);
        let mut o = Map::new();
        let mut parameters = Vec::new();
        if let Some(Value::Array(params)) = op.get("parameters") {
            for p in params {
                let mut q = Map::new();
                for k in ["name", "in", "description", "required"] {
                    if let Some(v) = p.get(k) {
                        q.insert(k.into(), v.clone());
                    }
                }
                if let Some(Value::Object(s)) = p.get("schema") {
                    for (k, v) in s {
                        q.insert(k.clone(), v.clone());
                    }
                }
                parameters.push(Value::Object(q));
            }
        }
        let body = content
            .and_then(|c| c.values().next())
            .and_then(|c| c.get("schema"));
        if let Some(schema) = body {
            parameters.push(json!({"name": "body", "in": "body", "required": true,
                                   "schema": schema_v2(schema)}));
        }
        if !parameters.is_empty() {
            o.insert("parameters".into(), Value::Array(parameters));
        }
        if let Some(content) = content
            && method == "patch"
        {
            o.insert(
                "consumes".into(),
                Value::Array(content.keys().map(|k| json!(k)).collect()),
            );
        }
        o.insert("produces".into(), json!(["application/json"]));
        let mut responses = Map::new();
        if let Some(Value::Object(rs)) = op.get("responses") {
            for (code, r) in rs {
                let mut v2 = Map::new();
                v2.insert(
                    "description".into(),
                    r.get("description").cloned().unwrap_or(json!("OK")),
                );
                if let Some(schema) = r.pointer("/content/application~1json/schema") {
                    v2.insert("schema".into(), schema_v2(schema));
                }
                responses.insert(code.clone(), Value::Object(v2));
            }
        }
        o.insert("responses".into(), Value::Object(responses));
        for (k, v) in op {
            if k.starts_with("x-") {
                o.insert(k.clone(), v.clone());
            }
        }
        out.insert(method.clone(), Value::Object(o));
    }
    Value::Object(out)
}

/// A v3 schema as v2's (see the module docs).
pub fn schema_v2(schema: &Value) -> Value {
    let Value::Object(s) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    // `allOf: [{$ref}]` is the reference itself.
    if let Some(Value::Array(all)) = s.get("allOf")
        && let [one] = all.as_slice()
        && let Some(Value::String(r)) = one.get("$ref")
    {
        out.insert("$ref".into(), json!(reference(r)));
        if let Some(d) = s.get("description") {
            out.insert("description".into(), d.clone());
        }
        return Value::Object(out);
    }
    if let Some(Value::String(r)) = s.get("$ref") {
        out.insert("$ref".into(), json!(reference(r)));
        if let Some(d) = s.get("description") {
            out.insert("description".into(), d.clone());
        }
        return Value::Object(out);
    }
    let nullable = s.get("nullable").and_then(Value::as_bool) == Some(true);
    for (k, v) in s {
        match k.as_str() {
            "nullable" | "anyOf" | "oneOf" | "not" | "allOf" => {}
            "type" if nullable => {}
            "properties" => {
                if let Value::Object(p) = v {
                    out.insert(
                        k.clone(),
                        Value::Object(p.iter().map(|(n, s)| (n.clone(), schema_v2(s))).collect()),
                    );
                }
            }
            "items" | "additionalProperties" if v.is_object() => {
                out.insert(k.clone(), schema_v2(v));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

fn reference(r: &str) -> String {
    match r.strip_prefix("#/components/schemas/") {
        Some(name) => format!("#/definitions/{name}"),
        None => r.to_string(),
    }
}

/// gnostic's `openapi.v2` messages, as far as a Kubernetes document uses them (the field
/// numbers of `google/gnostic-models` `openapiv2/OpenAPIv2.proto`).
mod gnostic {
    #![allow(missing_docs, unreachable_pub)]

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Document {
        #[prost(string, tag = "1")]
        pub swagger: String,
        #[prost(message, optional, tag = "2")]
        pub info: Option<Info>,
        #[prost(message, optional, tag = "8")]
        pub paths: Option<Paths>,
        #[prost(message, optional, tag = "9")]
        pub definitions: Option<Definitions>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Info {
        #[prost(string, tag = "1")]
        pub title: String,
        #[prost(string, tag = "2")]
        pub version: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Paths {
        #[prost(message, repeated, tag = "2")]
        pub path: Vec<NamedPathItem>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedPathItem {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<PathItem>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PathItem {
        #[prost(message, optional, tag = "2")]
        pub get: Option<Operation>,
        #[prost(message, optional, tag = "3")]
        pub put: Option<Operation>,
        #[prost(message, optional, tag = "4")]
        pub post: Option<Operation>,
        #[prost(message, optional, tag = "5")]
        pub delete: Option<Operation>,
        #[prost(message, optional, tag = "8")]
        pub patch: Option<Operation>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Operation {
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(string, tag = "5")]
        pub operation_id: String,
        #[prost(string, repeated, tag = "6")]
        pub produces: Vec<String>,
        #[prost(string, repeated, tag = "7")]
        pub consumes: Vec<String>,
        #[prost(message, repeated, tag = "8")]
        pub parameters: Vec<ParametersItem>,
        #[prost(message, optional, tag = "9")]
        pub responses: Option<Responses>,
        #[prost(message, repeated, tag = "13")]
        pub vendor_extension: Vec<NamedAny>,
    }

    /// `ParametersItem { oneof { Parameter parameter = 1; ... } }`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ParametersItem {
        #[prost(message, optional, tag = "1")]
        pub parameter: Option<Parameter>,
    }

    /// `Parameter { oneof { BodyParameter body_parameter = 1; NonBodyParameter
    /// non_body_parameter = 2; } }`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Parameter {
        #[prost(message, optional, tag = "1")]
        pub body_parameter: Option<BodyParameter>,
        #[prost(message, optional, tag = "2")]
        pub non_body_parameter: Option<NonBodyParameter>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BodyParameter {
        #[prost(string, tag = "1")]
        pub description: String,
        #[prost(string, tag = "2")]
        pub name: String,
        #[prost(string, tag = "3")]
        pub r#in: String,
        #[prost(bool, tag = "4")]
        pub required: bool,
        #[prost(message, optional, tag = "5")]
        pub schema: Option<Schema>,
    }

    /// `NonBodyParameter { oneof { ...; QueryParameterSubSchema query_parameter_sub_schema = 3;
    /// PathParameterSubSchema path_parameter_sub_schema = 4; } }`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NonBodyParameter {
        #[prost(message, optional, tag = "3")]
        pub query_parameter_sub_schema: Option<QueryParameter>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct QueryParameter {
        #[prost(bool, tag = "1")]
        pub required: bool,
        #[prost(string, tag = "2")]
        pub r#in: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(string, tag = "4")]
        pub name: String,
        #[prost(string, tag = "6")]
        pub r#type: String,
        #[prost(bool, tag = "20")]
        pub unique_items: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Responses {
        #[prost(message, repeated, tag = "1")]
        pub response_code: Vec<NamedResponseValue>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedResponseValue {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<ResponseValue>,
    }

    /// `ResponseValue { oneof { Response response = 1; JsonReference json_reference = 2; } }`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ResponseValue {
        #[prost(message, optional, tag = "1")]
        pub response: Option<Response>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Response {
        #[prost(string, tag = "1")]
        pub description: String,
        #[prost(message, optional, tag = "2")]
        pub schema: Option<SchemaItem>,
    }

    /// `SchemaItem { oneof { Schema schema = 1; FileSchema file_schema = 2; } }`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SchemaItem {
        #[prost(message, optional, tag = "1")]
        pub schema: Option<Schema>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Definitions {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSchema>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedSchema {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Schema>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Schema {
        #[prost(string, tag = "1")]
        pub r#ref: String,
        #[prost(string, tag = "2")]
        pub format: String,
        #[prost(string, tag = "3")]
        pub title: String,
        #[prost(string, tag = "4")]
        pub description: String,
        #[prost(message, optional, tag = "5")]
        pub default: Option<Any>,
        #[prost(double, tag = "6")]
        pub multiple_of: f64,
        #[prost(double, tag = "7")]
        pub maximum: f64,
        #[prost(bool, tag = "8")]
        pub exclusive_maximum: bool,
        #[prost(double, tag = "9")]
        pub minimum: f64,
        #[prost(bool, tag = "10")]
        pub exclusive_minimum: bool,
        #[prost(int64, tag = "11")]
        pub max_length: i64,
        #[prost(int64, tag = "12")]
        pub min_length: i64,
        #[prost(string, tag = "13")]
        pub pattern: String,
        #[prost(int64, tag = "14")]
        pub max_items: i64,
        #[prost(int64, tag = "15")]
        pub min_items: i64,
        #[prost(bool, tag = "16")]
        pub unique_items: bool,
        #[prost(int64, tag = "17")]
        pub max_properties: i64,
        #[prost(int64, tag = "18")]
        pub min_properties: i64,
        #[prost(string, repeated, tag = "19")]
        pub required: Vec<String>,
        #[prost(message, repeated, tag = "20")]
        pub r#enum: Vec<Any>,
        #[prost(message, optional, boxed, tag = "21")]
        pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
        #[prost(message, optional, tag = "22")]
        pub r#type: Option<TypeItem>,
        #[prost(message, optional, tag = "23")]
        pub items: Option<ItemsItem>,
        #[prost(message, optional, tag = "25")]
        pub properties: Option<Properties>,
        #[prost(bool, tag = "27")]
        pub read_only: bool,
        #[prost(message, optional, tag = "30")]
        pub example: Option<Any>,
        #[prost(message, repeated, tag = "31")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Properties {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSchema>,
    }

    /// `AdditionalPropertiesItem { oneof { Schema schema = 1; bool boolean = 2; } }`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AdditionalPropertiesItem {
        #[prost(message, optional, tag = "1")]
        pub schema: Option<Schema>,
        #[prost(bool, optional, tag = "2")]
        pub boolean: Option<bool>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TypeItem {
        #[prost(string, repeated, tag = "1")]
        pub value: Vec<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ItemsItem {
        #[prost(message, repeated, tag = "1")]
        pub schema: Vec<Schema>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedAny {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Any>,
    }

    /// `Any { google.protobuf.Any value = 1; string yaml = 2; }`: the YAML text only.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Any {
        #[prost(string, tag = "2")]
        pub yaml: String,
    }
}

/// `doc` (a [`document`]) in gnostic's protobuf form.
pub fn protobuf(doc: &Value) -> Vec<u8> {
    use gnostic::*;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let paths = doc.get("paths").and_then(Value::as_object).map(|p| Paths {
        path: p
            .iter()
            .map(|(name, item)| NamedPathItem {
                name: name.clone(),
                value: Some(PathItem {
                    get: item.get("get").map(operation),
                    put: item.get("put").map(operation),
                    post: item.get("post").map(operation),
                    delete: item.get("delete").map(operation),
                    patch: item.get("patch").map(operation),
                }),
            })
            .collect(),
    });
    let definitions = doc
        .get("definitions")
        .and_then(Value::as_object)
        .map(|d| Definitions {
            additional_properties: named_schemas(d),
        });
    let document = Document {
        swagger: text(doc.get("swagger")),
        info: doc.get("info").map(|i| Info {
            title: text(i.get("title")),
            version: text(i.get("version")),
        }),
        paths,
        definitions,
    };
    prost::Message::encode_to_vec(&document)
}

/// A value as gnostic's `Any`: its YAML text.
fn any(v: &Value) -> gnostic::Any {
    gnostic::Any {
        yaml: serde_yaml_ng::to_string(v).unwrap_or_default(),
    }
}

/// The `x-` members of `m` as gnostic's vendor extensions.
fn extensions(m: &Map<String, Value>) -> Vec<gnostic::NamedAny> {
    m.iter()
        .filter(|(k, _)| k.starts_with("x-"))
        .map(|(k, v)| gnostic::NamedAny {
            name: k.clone(),
            value: Some(any(v)),
        })
        .collect()
}

fn named_schemas(m: &Map<String, Value>) -> Vec<gnostic::NamedSchema> {
    m.iter()
        .map(|(name, s)| gnostic::NamedSchema {
            name: name.clone(),
            value: Some(schema(s)),
        })
        .collect()
}

fn schema(v: &Value) -> gnostic::Schema {
    let Value::Object(m) = v else {
        return gnostic::Schema::default();
    };
    let text = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let int = |k: &str| m.get(k).and_then(Value::as_i64).unwrap_or(0);
    let float = |k: &str| m.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    gnostic::Schema {
        r#ref: text("$ref"),
        format: text("format"),
        title: text("title"),
        description: text("description"),
        default: m.get("default").map(any),
        multiple_of: float("multipleOf"),
        maximum: float("maximum"),
        exclusive_maximum: flag("exclusiveMaximum"),
        minimum: float("minimum"),
        exclusive_minimum: flag("exclusiveMinimum"),
        max_length: int("maxLength"),
        min_length: int("minLength"),
        pattern: text("pattern"),
        max_items: int("maxItems"),
        min_items: int("minItems"),
        unique_items: flag("uniqueItems"),
        max_properties: int("maxProperties"),
        min_properties: int("minProperties"),
        required: m
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default(),
        r#enum: m
            .get("enum")
            .and_then(Value::as_array)
            .map(|e| e.iter().map(any).collect())
            .unwrap_or_default(),
        additional_properties: match m.get("additionalProperties") {
            Some(Value::Bool(b)) => Some(Box::new(gnostic::AdditionalPropertiesItem {
                schema: None,
                boolean: Some(*b),
            })),
            Some(s @ Value::Object(_)) => Some(Box::new(gnostic::AdditionalPropertiesItem {
                schema: Some(schema(s)),
                boolean: None,
            })),
            _ => None,
        },
        r#type: m
            .get("type")
            .and_then(Value::as_str)
            .map(|t| gnostic::TypeItem {
                value: vec![t.to_string()],
            }),
        items: m.get("items").map(|i| gnostic::ItemsItem {
            schema: vec![schema(i)],
        }),
        properties: m
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| gnostic::Properties {
                additional_properties: named_schemas(p),
            }),
        read_only: flag("readOnly"),
        example: m.get("example").map(any),
        vendor_extension: extensions(m),
    }
}

fn operation(v: &Value) -> gnostic::Operation {
    let Value::Object(m) = v else {
        return gnostic::Operation::default();
    };
    let strings = |k: &str| -> Vec<String> {
        m.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let parameters = m
        .get("parameters")
        .and_then(Value::as_array)
        .map(|ps| ps.iter().map(parameter).collect())
        .unwrap_or_default();
    let responses = m
        .get("responses")
        .and_then(Value::as_object)
        .map(|rs| gnostic::Responses {
            response_code: rs
                .iter()
                .map(|(code, r)| gnostic::NamedResponseValue {
                    name: code.clone(),
                    value: Some(gnostic::ResponseValue {
                        response: Some(gnostic::Response {
                            description: r
                                .get("description")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string(),
                            schema: r.get("schema").map(|s| gnostic::SchemaItem {
                                schema: Some(schema(s)),
                            }),
                        }),
                    }),
                })
                .collect(),
        });
    gnostic::Operation {
        description: m
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        operation_id: m
            .get("operationId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        produces: strings("produces"),
        consumes: strings("consumes"),
        parameters,
        responses,
        vendor_extension: extensions(m),
    }
}

fn parameter(p: &Value) -> gnostic::ParametersItem {
    let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let parameter = if p.get("in").and_then(Value::as_str) == Some("body") {
        gnostic::Parameter {
            body_parameter: Some(gnostic::BodyParameter {
                description: text("description"),
                name: text("name"),
                r#in: "body".into(),
                required: p.get("required").and_then(Value::as_bool).unwrap_or(false),
                schema: p.get("schema").map(schema),
            }),
            non_body_parameter: None,
        }
    } else {
        gnostic::Parameter {
            body_parameter: None,
            non_body_parameter: Some(gnostic::NonBodyParameter {
                query_parameter_sub_schema: Some(gnostic::QueryParameter {
                    required: p.get("required").and_then(Value::as_bool).unwrap_or(false),
                    r#in: text("in"),
                    description: text("description"),
                    name: text("name"),
                    r#type: text("type"),
                    unique_items: p
                        .get("uniqueItems")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                }),
            }),
        }
    };
    gnostic::ParametersItem {
        parameter: Some(parameter),
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    fn v3() -> Value {
        json!({
            "openapi": "3.0.0",
            "paths": {"/api/v1/namespaces/{namespace}/configmaps/{name}": {
                "get": {"x-kubernetes-action": "get",
                        "x-kubernetes-group-version-kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.ConfigMap"}}}}}},
                "patch": {"x-kubernetes-action": "patch",
                          "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}}],
                          "requestBody": {"content": {
                              "application/json-patch+json": {"schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.ConfigMap"}},
                              "application/merge-patch+json": {"schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.ConfigMap"}}},
                              "required": true}}}},
            "components": {"schemas": {"io.k8s.api.core.v1.ConfigMap": {
                "type": "object", "description": "ConfigMap holds configuration data.",
                "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}],
                "properties": {
                    "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "description": "Standard object's metadata."},
                    "data": {"type": "object", "additionalProperties": {"type": "string"}},
                    "maybe": {"type": "string", "nullable": true, "minLength": 1},
                    "either": {"anyOf": [{"type": "string"}, {"type": "integer"}], "x-kubernetes-int-or-string": true}}}}},
        })
    }

    #[test]
    fn a_v3_document_becomes_swagger_2() {
        let doc = document([v3()].iter(), "v1.33.0");
        assert_eq!(doc["swagger"], "2.0");
        let cm = &doc["definitions"]["io.k8s.api.core.v1.ConfigMap"];
        assert_eq!(
            cm["properties"]["metadata"],
            json!({"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                   "description": "Standard object's metadata."})
        );
        assert_eq!(
            cm["properties"]["maybe"],
            json!({"minLength": 1}),
            "nullable loses its type"
        );
        assert_eq!(
            cm["properties"]["either"],
            json!({"x-kubernetes-int-or-string": true})
        );
        let path = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
        assert_eq!(
            path["get"]["responses"]["200"]["schema"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.ConfigMap"
        );
        let patch = &path["patch"];
        assert_eq!(
            patch["consumes"],
            json!([
                "application/json-patch+json",
                "application/merge-patch+json"
            ])
        );
        assert_eq!(
            patch["parameters"][0],
            json!({"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true})
        );
        assert_eq!(patch["parameters"][1]["in"], "body");
    }

    /// The protobuf reads back as gnostic's messages: vendor extensions as YAML, a type as a
    /// list of one, a reference as `_ref`.
    #[test]
    fn the_protobuf_is_gnostics_document() {
        let doc = document([v3()].iter(), "v1.33.0");
        let pb = gnostic::Document::decode(protobuf(&doc).as_slice()).expect("decodes");
        assert_eq!(pb.swagger, "2.0");
        assert_eq!(
            pb.info.as_ref().map(|i| i.version.as_str()),
            Some("v1.33.0")
        );
        let defs = pb.definitions.expect("definitions").additional_properties;
        let cm = defs[0].value.as_ref().expect("a schema");
        assert_eq!(defs[0].name, "io.k8s.api.core.v1.ConfigMap");
        assert_eq!(
            cm.r#type.as_ref().map(|t| t.value.clone()),
            Some(vec!["object".to_string()])
        );
        assert_eq!(
            cm.vendor_extension[0].name,
            "x-kubernetes-group-version-kind"
        );
        let yaml = &cm.vendor_extension[0].value.as_ref().expect("a value").yaml;
        let gvk: Value = serde_yaml_ng::from_str(yaml).expect("YAML");
        assert_eq!(
            gvk,
            json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
        );
        let props = cm
            .properties
            .as_ref()
            .expect("properties")
            .additional_properties
            .clone();
        let meta = props
            .iter()
            .find(|p| p.name == "metadata")
            .expect("metadata");
        assert_eq!(
            meta.value.as_ref().map(|s| s.r#ref.as_str()),
            Some("#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        );
        let maybe = props.iter().find(|p| p.name == "maybe").expect("maybe");
        assert_eq!(maybe.value.as_ref().map(|s| s.min_length), Some(1));
        let path = &pb.paths.expect("paths").path[0];
        let patch = path
            .value
            .as_ref()
            .and_then(|p| p.patch.as_ref())
            .expect("patch");
        let query = patch.parameters[0]
            .parameter
            .as_ref()
            .and_then(|p| p.non_body_parameter.as_ref())
            .and_then(|p| p.query_parameter_sub_schema.as_ref())
            .expect("a query parameter");
        assert_eq!(
            (query.name.as_str(), query.r#in.as_str()),
            ("fieldValidation", "query")
        );
    }

    #[test]
    fn media_follows_the_accept_header() {
        assert_eq!(media(PROTOBUF_ACCEPT), Some(Media::Protobuf));
        assert_eq!(media("application/json"), Some(Media::Json));
        assert_eq!(media(""), Some(Media::Json));
        assert_eq!(media("*/*"), Some(Media::Json));
        assert_eq!(media("text/html"), None);
    }
}
