//! Query parameters as upstream's handlers read them (`metav1.ListOptions`, `GetOptions`,
//! `CreateOptions`, `PatchOptions`, `DeleteOptions` from the query), and the content types of
//! requests and responses (`Accept`, `Content-Type`).

use std::collections::HashMap;

use kubestore_proto::meta::v1::{ListOptions, ResourceVersionMatch};

use crate::{
    catalog::{FieldValidation, IncludeObject, Output, WriteOptions},
    error::ApiError,
};

/// A request's query, decoded (a repeated key keeps its first value, as Go's `Get`).
#[derive(Debug, Default)]
pub struct Query(HashMap<String, String>);

impl Query {
    /// Parses `query` (`a=b&c=d`, percent-encoded, `+` as a space).
    pub fn parse(query: Option<&str>) -> Self {
        let mut map = HashMap::new();
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            };
            map.entry(decode(k)).or_insert_with(|| decode(v));
        }
        Self(map)
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// A boolean parameter as Go's `strconv.ParseBool` reads it (`1`, `t`, `true`, ...).
    pub fn flag(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some("1" | "t" | "T" | "true" | "TRUE" | "True") => Ok(Some(true)),
            Some("0" | "f" | "F" | "false" | "FALSE" | "False") => Ok(Some(false)),
            Some(other) => Err(ApiError::BadRequest(format!(
                "invalid boolean value for {key}: {other:?}"
            ))),
        }
    }

    fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::BadRequest(format!("invalid value for {key}: {v:?}: not an integer"))
            }),
        }
    }

    /// Whether the request is a watch (`watch=true`, `watch=1`).
    pub fn watch(&self) -> Result<bool, ApiError> {
        Ok(self.flag("watch")?.unwrap_or(false))
    }

    /// The List/Watch options.
    pub fn list_options(&self) -> Result<ListOptions, ApiError> {
        let resource_version_match = match self.get("resourceVersionMatch") {
            None | Some("") => ResourceVersionMatch::Unspecified,
            Some("NotOlderThan") => ResourceVersionMatch::NotOlderThan,
            Some("Exact") => ResourceVersionMatch::Exact,
            Some(other) => {
                return Err(ApiError::invalid(
                    "ListOptions",
                    "",
                    vec![(
                        "resourceVersionMatch".to_string(),
                        format!(
                            "Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
                        ),
                    )],
                ));
            }
        };
        Ok(ListOptions {
            label_selector: self.get("labelSelector").unwrap_or("").to_string(),
            field_selector: self.get("fieldSelector").unwrap_or("").to_string(),
            resource_version: self.get("resourceVersion").unwrap_or("").to_string(),
            resource_version_match: resource_version_match as i32,
            limit: self.int("limit")?.unwrap_or(0).max(0),
            r#continue: self.get("continue").unwrap_or("").to_string(),
            send_initial_events: self.flag("sendInitialEvents")?,
            allow_watch_bookmarks: self.flag("allowWatchBookmarks")?.unwrap_or(false),
            timeout_seconds: self.int("timeoutSeconds")?,
        })
    }

    /// The options of a write: `dryRun`, `fieldValidation`, `fieldManager`, as upstream
    /// validates them.
    pub fn write_options(&self) -> Result<WriteOptions, ApiError> {
        let dry_run = match self.get("dryRun") {
            None | Some("") => false,
            Some("All") => true,
            Some(other) => {
                return Err(ApiError::invalid(
                    "",
                    "",
                    vec![(
                        "dryRun".to_string(),
                        format!("Unsupported value: {other:?}: supported values: \"All\""),
                    )],
                ));
            }
        };
        let field_validation = match self.get("fieldValidation") {
            None | Some("") => FieldValidation::Warn,
            Some("Ignore") => FieldValidation::Ignore,
            Some("Warn") => FieldValidation::Warn,
            Some("Strict") => FieldValidation::Strict,
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {other:?}"
                )));
            }
        };
        let field_manager = self.get("fieldManager").unwrap_or("").to_string();
        crate::managed::check_field_manager(&field_manager)?;
        // Upstream's reading of a boolean query parameter: "", "0" and "false" (any case) are
        // false, anything else true.
        let force = self
            .get("force")
            .is_some_and(|f| !(f.is_empty() || f == "0" || f.eq_ignore_ascii_case("false")));
        Ok(WriteOptions {
            dry_run,
            field_validation,
            field_manager,
            force,
            body_bytes: 0,
        })
    }
}

/// The media types a client accepts, in its order, with their parameters.
#[derive(Debug)]
pub struct Accept(Vec<(String, HashMap<String, String>)>);

impl Accept {
    /// Parses an `Accept` header (absent: anything).
    pub fn parse(header: Option<&str>) -> Self {
        let mut out = Vec::new();
        for part in header.unwrap_or("*/*").split(',') {
            let mut pieces = part.split(';').map(str::trim);
            let media = pieces.next().unwrap_or("").to_ascii_lowercase();
            if media.is_empty() {
                continue;
            }
            let params = pieces
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
                .collect();
            out.push((media, params));
        }
        Self(out)
    }

    /// The output the client asks for: the first acceptable entry (a Table in `meta.k8s.io`
    /// v1 or v1beta1, or plain JSON, protobuf or YAML, which this server answers in JSON);
    /// `NotAcceptable` when nothing is.
    pub fn output(&self, query: &Query) -> Result<Output, ApiError> {
        for (media, params) in &self.0 {
            let json_like = matches!(
                media.as_str(),
                "application/json"
                    | "*/*"
                    | "application/*"
                    | "application/vnd.kubernetes.protobuf"
                    | "application/yaml"
            );
            if !json_like {
                continue;
            }
            match params.get("as").map(String::as_str) {
                None => return Ok(Output::Object),
                Some("Table")
                    if params.get("g").map(String::as_str) == Some("meta.k8s.io")
                        && matches!(
                            params.get("v").map(String::as_str),
                            Some("v1" | "v1beta1")
                        )
                        && media == "application/json" =>
                {
                    let include_object = match query.get("includeObject") {
                        None | Some("" | "Metadata") => IncludeObject::Metadata,
                        Some("None") => IncludeObject::None,
                        Some("Object") => IncludeObject::Object,
                        Some(other) => {
                            return Err(ApiError::BadRequest(format!(
                                "includeObject must be one of \"None\", \"Metadata\" or \"Object\", got {other:?}"
                            )));
                        }
                    };
                    return Ok(Output::Table {
                        include_object,
                        no_headers: false,
                    });
                }
                Some("PartialObjectMetadata" | "PartialObjectMetadataList")
                    if params.get("g").map(String::as_str) == Some("meta.k8s.io")
                        && matches!(
                            params.get("v").map(String::as_str),
                            Some("v1" | "v1beta1")
                        ) =>
                {
                    return Ok(Output::Metadata);
                }
                Some(_) => continue,
            }
        }
        Err(ApiError::NotAcceptable(
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;as=Table;v=v1;g=meta.k8s.io".into(),
        ))
    }

    /// Whether the client asks for aggregated discovery (`as=APIGroupDiscoveryList` in
    /// `apidiscovery.k8s.io` `v2` or `v2beta1`), and the media type to answer with.
    pub fn aggregated_discovery(&self) -> Option<String> {
        for (media, params) in &self.0 {
            if media != "application/json" {
                continue;
            }
            if params.get("as").map(String::as_str) == Some("APIGroupDiscoveryList")
                && params.get("g").map(String::as_str) == Some("apidiscovery.k8s.io")
                && let Some(v @ ("v2" | "v2beta1")) = params.get("v").map(String::as_str)
            {
                return Some(format!(
                    "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
                ));
            }
            // A plain JSON entry before any aggregated one: legacy discovery.
            if !params.contains_key("as") {
                return None;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_and_accept_headers_read_as_upstreams() {
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb&limit=500&watch=1&resourceVersionMatch=NotOlderThan&sendInitialEvents=true",
        ));
        let o = q.list_options().expect("valid");
        assert_eq!(o.label_selector, "app=web");
        assert_eq!(o.limit, 500);
        assert_eq!(o.send_initial_events, Some(true));
        assert!(q.watch().expect("bool"));
        let a = Accept::parse(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
        ));
        assert!(matches!(
            a.output(&Query::default()),
            Ok(Output::Table { .. })
        ));
        let plain = Accept::parse(Some("application/vnd.kubernetes.protobuf,application/json"));
        assert_eq!(plain.output(&Query::default()).ok(), Some(Output::Object));
        let disc = Accept::parse(Some(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        ));
        assert_eq!(
            disc.aggregated_discovery().as_deref(),
            Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
        );
        let old = Accept::parse(Some(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
        ));
        assert!(old.aggregated_discovery().is_some());
        assert!(
            Accept::parse(Some("application/json"))
                .aggregated_discovery()
                .is_none()
        );
        assert!(Query::parse(Some("dryRun=Some")).write_options().is_err());
    }
}
