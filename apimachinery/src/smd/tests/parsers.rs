//! The schemas of upstream's `merge/*_test.go`, in upstream's schema format (test data).

use super::fixture::parser;
use crate::smd::typed::ParseableType;

/// Upstream `portListParser` (`merge/default_keys_test.go`).
pub(super) fn port_list() -> ParseableType {
    parser(
        r#"types:
- name: v1
  map:
    fields:
      - name: containerPorts
        type:
          list:
            elementType:
              map:
                fields:
                - name: port
                  type:
                    scalar: numeric
                - name: protocol
                  default: "TCP"
                  type:
                    scalar: string
                - name: name
                  type:
                    scalar: string
            elementRelationship: associative
            keys:
            - port
            - protocol
"#,
        "v1",
    )
}

/// Upstream `bookParser` (`merge/default_keys_test.go`).
pub(super) fn book() -> ParseableType {
    parser(
        r#"types:
- name: v1
  map:
    fields:
      - name: book
        type:
          list:
            elementType:
              map:
                fields:
                - name: chapter
                  default: 1
                  type:
                    scalar: numeric
                - name: section
                  default: "A"
                  type:
                    scalar: string
                - name: sentences
                  type:
                    list:
                      elementType:
                        map:
                          fields:
                          - name: page
                            default: 2.0
                            type:
                              scalar: numeric
                          - name: line
                            default: 3
                            type:
                              scalar: numeric
                          - name: text
                            type:
                              scalar: string
                      elementRelationship: associative
                      keys:
                      - page
                      - line
            elementRelationship: associative
            keys:
            - chapter
            - section
"#,
        "v1",
    )
}

/// Upstream `duplicatesParser` (`merge/duplicates_test.go`).
pub(super) fn duplicates() -> ParseableType {
    parser(
        r#"types:
- name: type
  map:
    fields:
      - name: list
        type:
          namedType: associativeList
      - name: unrelated
        type:
          scalar: numeric
      - name: set
        type:
          namedType: set
- name: associativeList
  list:
    elementType:
      namedType: myElement
    elementRelationship: associative
    keys:
    - name
- name: myElement
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: value1
      type:
        scalar: numeric
    - name: value2
      type:
        scalar: numeric
- name: set
  list:
    elementType:
      scalar: numeric
    elementRelationship: associative
"#,
        "type",
    )
}

/// Upstream `associativeListParser` (`merge/key_test.go`).
pub(super) fn associative_list() -> ParseableType {
    parser(
        r#"types:
- name: type
  map:
    fields:
      - name: list
        type:
          namedType: associativeList
- name: associativeList
  list:
    elementType:
      namedType: myElement
    elementRelationship: associative
    keys:
    - name
- name: myElement
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: value
      type:
        scalar: numeric
"#,
        "type",
    )
}

/// Upstream `leafFieldsParser` (`merge/leaf_test.go`).
pub(super) fn leaf_fields() -> ParseableType {
    parser(
        r#"types:
- name: leafFields
  map:
    fields:
    - name: numeric
      type:
        scalar: numeric
    - name: string
      type:
        scalar: string
    - name: bool
      type:
        scalar: boolean"#,
        "leafFields",
    )
}

/// Upstream `atomicMapParser` (`merge/multiple_appliers_test.go`).
pub(super) fn atomic_map() -> ParseableType {
    parser(
        r#"types:
- name: v1
  map:
    fields:
      - name: atomicMap
        type:
          namedType: atomicMap
- name: atomicMap
  map:
    fields:
      - name: field1
        type:
          scalar: string
      - name: field2
        type:
          scalar: string
    elementRelationship: atomic
"#,
        "v1",
    )
}

/// Upstream `nestedTypeParser` (`merge/nested_test.go`).
pub(super) fn nested_type() -> ParseableType {
    parser(
        r#"types:
- name: type
  map:
    fields:
      - name: listOfLists
        type:
          namedType: listOfLists
      - name: listOfMaps
        type:
          namedType: listOfMaps
      - name: mapOfLists
        type:
          namedType: mapOfLists
      - name: mapOfMaps
        type:
          namedType: mapOfMaps
      - name: mapOfMapsRecursive
        type:
          namedType: mapOfMapsRecursive
      - name: struct
        type:
          namedType: struct
- name: struct
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: value
      type:
        scalar: numeric
- name: listOfLists
  list:
    elementType:
      map:
        fields:
        - name: name
          type:
            scalar: string
        - name: value
          type:
            namedType: list
    elementRelationship: associative
    keys:
    - name
- name: list
  list:
    elementType:
      scalar: string
    elementRelationship: associative
- name: listOfMaps
  list:
    elementType:
      map:
        fields:
        - name: name
          type:
            scalar: string
        - name: value
          type:
            namedType: map
    elementRelationship: associative
    keys:
    - name
- name: map
  map:
    elementType:
      scalar: string
    elementRelationship: associative
- name: mapOfLists
  map:
    elementType:
      namedType: list
    elementRelationship: associative
- name: mapOfMaps
  map:
    elementType:
      namedType: map
    elementRelationship: associative
- name: mapOfMapsRecursive
  map:
    elementType:
      namedType: mapOfMapsRecursive
    elementRelationship: associative
"#,
        "type",
    )
}

/// Upstream `preserveUnknownParser` (`merge/preserve_unknown_test.go`).
pub(super) fn preserve_unknown() -> ParseableType {
    parser(
        r#"types:
- name: type
  map:
    fields:
      - name: num
        type:
          scalar: numeric
    elementType:
      scalar: string
"#,
        "type",
    )
}

/// Upstream `setFieldsParser` (`merge/set_test.go`).
pub(super) fn set_fields() -> ParseableType {
    parser(
        r#"types:
- name: sets
  map:
    fields:
    - name: list
      type:
        list:
          elementType:
            scalar: string
          elementRelationship: associative"#,
        "sets",
    )
}
