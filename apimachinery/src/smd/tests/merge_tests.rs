//! Upstream's `merge/*_test.go` cases (generated from upstream's test tables: each module is an
//! upstream test function, each test one of its cases, with upstream's objects as JSON).

use serde_json::json;

use super::{
    fixture::{TestCase, apply, apply_conflicts, fld, force_apply, key, managed, run, update, val},
    parsers::*,
};
use crate::smd::typed::ParseableType;

/// Upstream `TestUpdateAssociativeLists`.
mod update_associative_lists {
    use super::*;

    /// Upstream `TestUpdateAssociativeLists/removing_obsolete_applied_structs`.
    #[test]
    fn removing_obsolete_applied_structs() {
        run(
            &associative_list(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"list": [{"name": "a", "value": 1}]}),
                    ),
                    apply(
                        "default",
                        "v1",
                        json!({"list": [{"name": "b", "value": 2}]}),
                    ),
                ],
                object: Some(json!({"list": [{"name": "b", "value": 2}]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("list"), key(&[("name", json!("b"))])],
                        vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                        vec![fld("list"), key(&[("name", json!("b"))]), fld("value")],
                    ],
                )])),
            },
        );
    }
}

/// Upstream `TestUpdateSet`.
mod update_set {
    use super::*;

    /// Upstream `TestUpdateSet/apply_twice`.
    #[test]
    fn apply_twice() {
        run(
            &set_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "c"]})),
                    apply("default", "v1", json!({"list": ["a", "b", "c", "d"]})),
                ],
                object: Some(json!({"list": ["a", "b", "c", "d"]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("list"), val(json!("a"))],
                        vec![fld("list"), val(json!("b"))],
                        vec![fld("list"), val(json!("c"))],
                        vec![fld("list"), val(json!("d"))],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateSet/apply_update_apply_no_overlap`.
    #[test]
    fn apply_update_apply_no_overlap() {
        run(
            &set_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "c"]})),
                    update("controller", "v1", json!({"list": ["a", "b", "c", "d"]})),
                    apply(
                        "default",
                        "v1",
                        json!({"list": ["a", "aprime", "c", "cprime"]}),
                    ),
                ],
                object: Some(json!({"list": ["a", "b", "aprime", "c", "d", "cprime"]})),
                managed: Some(managed(vec![
                    (
                        "default",
                        "v1",
                        vec![
                            vec![fld("list"), val(json!("a"))],
                            vec![fld("list"), val(json!("aprime"))],
                            vec![fld("list"), val(json!("c"))],
                            vec![fld("list"), val(json!("cprime"))],
                        ],
                    ),
                    (
                        "controller",
                        "v1",
                        vec![
                            vec![fld("list"), val(json!("b"))],
                            vec![fld("list"), val(json!("d"))],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestUpdateSet/apply_update_apply_no_overlap_and_different_version`.
    #[test]
    fn apply_update_apply_no_overlap_and_different_version() {
        run(
            &set_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "c"]})),
                    update("controller", "v2", json!({"list": ["a", "b", "c", "d"]})),
                    apply(
                        "default",
                        "v1",
                        json!({"list": ["a", "aprime", "c", "cprime"]}),
                    ),
                ],
                object: Some(json!({"list": ["a", "b", "aprime", "c", "d", "cprime"]})),
                managed: Some(managed(vec![
                    (
                        "default",
                        "v1",
                        vec![
                            vec![fld("list"), val(json!("a"))],
                            vec![fld("list"), val(json!("aprime"))],
                            vec![fld("list"), val(json!("c"))],
                            vec![fld("list"), val(json!("cprime"))],
                        ],
                    ),
                    (
                        "controller",
                        "v2",
                        vec![
                            vec![fld("list"), val(json!("b"))],
                            vec![fld("list"), val(json!("d"))],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestUpdateSet/apply_update_apply_with_overlap`.
    #[test]
    fn apply_update_apply_with_overlap() {
        run(
            &set_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "c"]})),
                    update("controller", "v1", json!({"list": ["a", "b", "c", "d"]})),
                    apply("default", "v1", json!({"list": ["a", "b", "c"]})),
                ],
                object: Some(json!({"list": ["a", "b", "c", "d"]})),
                managed: Some(managed(vec![
                    (
                        "default",
                        "v1",
                        vec![
                            vec![fld("list"), val(json!("a"))],
                            vec![fld("list"), val(json!("b"))],
                            vec![fld("list"), val(json!("c"))],
                        ],
                    ),
                    (
                        "controller",
                        "v1",
                        vec![
                            vec![fld("list"), val(json!("b"))],
                            vec![fld("list"), val(json!("d"))],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestUpdateSet/apply_update_apply_with_overlap_and_different_version`.
    #[test]
    fn apply_update_apply_with_overlap_and_different_version() {
        run(
            &set_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "c"]})),
                    update("controller", "v2", json!({"list": ["a", "b", "c", "d"]})),
                    apply("default", "v1", json!({"list": ["a", "b", "c"]})),
                ],
                object: Some(json!({"list": ["a", "b", "c", "d"]})),
                managed: Some(managed(vec![
                    (
                        "default",
                        "v1",
                        vec![
                            vec![fld("list"), val(json!("a"))],
                            vec![fld("list"), val(json!("b"))],
                            vec![fld("list"), val(json!("c"))],
                        ],
                    ),
                    (
                        "controller",
                        "v2",
                        vec![
                            vec![fld("list"), val(json!("b"))],
                            vec![fld("list"), val(json!("d"))],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestUpdateSet/apply_twice_reorder`.
    #[test]
    fn apply_twice_reorder() {
        run(
            &set_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "b", "c", "d"]})),
                    apply("default", "v1", json!({"list": ["a", "d", "c", "b"]})),
                ],
                object: Some(json!({"list": ["a", "d", "c", "b"]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("list"), val(json!("a"))],
                        vec![fld("list"), val(json!("b"))],
                        vec![fld("list"), val(json!("c"))],
                        vec![fld("list"), val(json!("d"))],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateSet/apply_update_apply_reorder`.
    #[test]
    fn apply_update_apply_reorder() {
        run(
            &set_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "b", "c", "d"]})),
                    update("controller", "v1", json!({"list": ["a", "d", "c", "b"]})),
                    apply("default", "v1", json!({"list": ["a", "b", "c", "d"]})),
                ],
                object: Some(json!({"list": ["a", "b", "c", "d"]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("list"), val(json!("a"))],
                        vec![fld("list"), val(json!("b"))],
                        vec![fld("list"), val(json!("c"))],
                        vec![fld("list"), val(json!("d"))],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateSet/apply_update_apply_reorder_across_versions`.
    #[test]
    fn apply_update_apply_reorder_across_versions() {
        run(
            &set_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "b", "c", "d"]})),
                    update("controller", "v1", json!({"list": ["a", "d", "c", "b"]})),
                    apply("default", "v2", json!({"list": ["a", "b", "c", "d"]})),
                ],
                object: Some(json!({"list": ["a", "b", "c", "d"]})),
                managed: Some(managed(vec![(
                    "default",
                    "v2",
                    vec![
                        vec![fld("list"), val(json!("a"))],
                        vec![fld("list"), val(json!("b"))],
                        vec![fld("list"), val(json!("c"))],
                        vec![fld("list"), val(json!("d"))],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateSet/apply_twice_remove`.
    #[test]
    fn apply_twice_remove() {
        run(
            &set_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "b", "c", "d"]})),
                    apply("default", "v1", json!({"list": ["a", "c"]})),
                ],
                object: Some(json!({"list": ["a", "c"]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("list"), val(json!("a"))],
                        vec![fld("list"), val(json!("c"))],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateSet/apply_twice_remove_across_versions`.
    #[test]
    fn apply_twice_remove_across_versions() {
        run(
            &set_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "b", "c", "d"]})),
                    apply("default", "v2", json!({"list": ["a", "c", "e"]})),
                ],
                object: Some(json!({"list": ["a", "c", "e"]})),
                managed: Some(managed(vec![(
                    "default",
                    "v2",
                    vec![
                        vec![fld("list"), val(json!("a"))],
                        vec![fld("list"), val(json!("c"))],
                        vec![fld("list"), val(json!("e"))],
                    ],
                )])),
            },
        );
    }
}

/// Upstream `TestUpdateLeaf`.
mod update_leaf {
    use super::*;

    /// Upstream `TestUpdateLeaf/apply_twice`.
    #[test]
    fn apply_twice() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"numeric": 1, "string": "string"})),
                    apply(
                        "default",
                        "v1",
                        json!({"numeric": 2, "string": "string", "bool": false}),
                    ),
                ],
                object: Some(json!({"numeric": 2, "string": "string", "bool": false})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![vec![fld("numeric")], vec![fld("string")], vec![fld("bool")]],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateLeaf/apply_twice_different_versions`.
    #[test]
    fn apply_twice_different_versions() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"numeric": 1, "string": "string"})),
                    apply(
                        "default",
                        "v2",
                        json!({"numeric": 2, "string": "string", "bool": false}),
                    ),
                ],
                object: Some(json!({"numeric": 2, "string": "string", "bool": false})),
                managed: Some(managed(vec![(
                    "default",
                    "v2",
                    vec![vec![fld("numeric")], vec![fld("string")], vec![fld("bool")]],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateLeaf/apply_update_apply_no_conflict`.
    #[test]
    fn apply_update_apply_no_conflict() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"numeric": 1, "string": "string"})),
                    update(
                        "controller",
                        "v1",
                        json!({"numeric": 1, "string": "string", "bool": true}),
                    ),
                    apply("default", "v1", json!({"numeric": 2, "string": "string"})),
                ],
                object: Some(json!({"numeric": 2, "string": "string", "bool": true})),
                managed: Some(managed(vec![
                    (
                        "default",
                        "v1",
                        vec![vec![fld("numeric")], vec![fld("string")]],
                    ),
                    ("controller", "v1", vec![vec![fld("bool")]]),
                ])),
            },
        );
    }

    /// Upstream `TestUpdateLeaf/apply_update_apply_no_conflict_different_version`.
    #[test]
    fn apply_update_apply_no_conflict_different_version() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"numeric": 1, "string": "string"})),
                    update(
                        "controller",
                        "v2",
                        json!({"numeric": 1, "string": "string", "bool": true}),
                    ),
                    apply("default", "v1", json!({"numeric": 2, "string": "string"})),
                ],
                object: Some(json!({"numeric": 2, "string": "string", "bool": true})),
                managed: Some(managed(vec![
                    (
                        "default",
                        "v1",
                        vec![vec![fld("numeric")], vec![fld("string")]],
                    ),
                    ("controller", "v2", vec![vec![fld("bool")]]),
                ])),
            },
        );
    }

    /// Upstream `TestUpdateLeaf/apply_update_apply_with_conflict`.
    #[test]
    fn apply_update_apply_with_conflict() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"numeric": 1, "string": "string"})),
                    update(
                        "controller",
                        "v1",
                        json!({"numeric": 1, "string": "controller string", "bool": true}),
                    ),
                    apply_conflicts(
                        "default",
                        "v1",
                        json!({"numeric": 2, "string": "user string"}),
                        vec![("controller", vec![fld("string")])],
                    ),
                    force_apply(
                        "default",
                        "v1",
                        json!({"numeric": 2, "string": "user string"}),
                    ),
                ],
                object: Some(json!({"numeric": 2, "string": "user string", "bool": true})),
                managed: Some(managed(vec![
                    (
                        "default",
                        "v1",
                        vec![vec![fld("numeric")], vec![fld("string")]],
                    ),
                    ("controller", "v1", vec![vec![fld("bool")]]),
                ])),
            },
        );
    }

    /// Upstream `TestUpdateLeaf/apply_update_apply_with_conflict_across_version`.
    #[test]
    fn apply_update_apply_with_conflict_across_version() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"numeric": 1, "string": "string"})),
                    update(
                        "controller",
                        "v2",
                        json!({"numeric": 1, "string": "controller string", "bool": true}),
                    ),
                    apply_conflicts(
                        "default",
                        "v1",
                        json!({"numeric": 2, "string": "user string"}),
                        vec![("controller", vec![fld("string")])],
                    ),
                    force_apply(
                        "default",
                        "v1",
                        json!({"numeric": 2, "string": "user string"}),
                    ),
                ],
                object: Some(json!({"numeric": 2, "string": "user string", "bool": true})),
                managed: Some(managed(vec![
                    (
                        "default",
                        "v1",
                        vec![vec![fld("numeric")], vec![fld("string")]],
                    ),
                    ("controller", "v2", vec![vec![fld("bool")]]),
                ])),
            },
        );
    }

    /// Upstream `TestUpdateLeaf/apply_twice_remove`.
    #[test]
    fn apply_twice_remove() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"numeric": 1, "string": "string", "bool": false}),
                    ),
                    apply("default", "v1", json!({"string": "new string"})),
                ],
                object: Some(json!({"string": "new string"})),
                managed: Some(managed(vec![("default", "v1", vec![vec![fld("string")]])])),
            },
        );
    }

    /// Upstream `TestUpdateLeaf/update_apply_omits`.
    #[test]
    fn update_apply_omits() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"numeric": 2})),
                    update("controller", "v1", json!({"numeric": 1})),
                    apply("default", "v1", json!(null)),
                ],
                object: Some(json!({"numeric": 1})),
                managed: Some(managed(vec![(
                    "controller",
                    "v1",
                    vec![vec![fld("numeric")]],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateLeaf/apply_twice_remove_different_version`.
    #[test]
    fn apply_twice_remove_different_version() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"numeric": 1, "string": "string", "bool": false}),
                    ),
                    apply("default", "v2", json!({"string": "new string"})),
                ],
                object: Some(json!({"string": "new string"})),
                managed: Some(managed(vec![("default", "v2", vec![vec![fld("string")]])])),
            },
        );
    }

    /// Upstream `TestUpdateLeaf/update_remove_empty_set`.
    #[test]
    fn update_remove_empty_set() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"string": "string"})),
                    update("controller", "v1", json!({"string": "new string"})),
                ],
                object: Some(json!({"string": "new string"})),
                managed: Some(managed(vec![(
                    "controller",
                    "v1",
                    vec![vec![fld("string")]],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateLeaf/apply_remove_empty_set`.
    #[test]
    fn apply_remove_empty_set() {
        run(
            &leaf_fields(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"string": "string"})),
                    apply("default", "v1", json!(null)),
                ],
                object: None,
                managed: Some(managed(vec![])),
            },
        );
    }
}

/// Upstream `TestUpdateNestedType`.
mod update_nested_type {
    use super::*;

    /// Upstream `TestUpdateNestedType/listOfLists_change_value`.
    #[test]
    fn list_of_lists_change_value() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"listOfLists": [{"name": "a", "value": ["b", "c"]}]}),
                    ),
                    apply(
                        "default",
                        "v1",
                        json!({"listOfLists": [{"name": "a", "value": ["a", "c"]}]}),
                    ),
                ],
                object: Some(json!({"listOfLists": [{"name": "a", "value": ["a", "c"]}]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("listOfLists"), key(&[("name", json!("a"))])],
                        vec![
                            fld("listOfLists"),
                            key(&[("name", json!("a"))]),
                            fld("name"),
                        ],
                        vec![
                            fld("listOfLists"),
                            key(&[("name", json!("a"))]),
                            fld("value"),
                            val(json!("a")),
                        ],
                        vec![
                            fld("listOfLists"),
                            key(&[("name", json!("a"))]),
                            fld("value"),
                            val(json!("c")),
                        ],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/listOfLists_change_key_and_value`.
    #[test]
    fn list_of_lists_change_key_and_value() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"listOfLists": [{"name": "a", "value": ["b", "c"]}]}),
                    ),
                    apply(
                        "default",
                        "v1",
                        json!({"listOfLists": [{"name": "b", "value": ["a", "c"]}]}),
                    ),
                ],
                object: Some(json!({"listOfLists": [{"name": "b", "value": ["a", "c"]}]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("listOfLists"), key(&[("name", json!("b"))])],
                        vec![
                            fld("listOfLists"),
                            key(&[("name", json!("b"))]),
                            fld("name"),
                        ],
                        vec![
                            fld("listOfLists"),
                            key(&[("name", json!("b"))]),
                            fld("value"),
                            val(json!("a")),
                        ],
                        vec![
                            fld("listOfLists"),
                            key(&[("name", json!("b"))]),
                            fld("value"),
                            val(json!("c")),
                        ],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/listOfMaps_change_value`.
    #[test]
    fn list_of_maps_change_value() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"listOfMaps": [{"name": "a", "value": {"b": "x", "c": "y"}}]}),
                    ),
                    apply(
                        "default",
                        "v1",
                        json!({"listOfMaps": [{"name": "a", "value": {"a": "x", "c": "z"}}]}),
                    ),
                ],
                object: Some(json!({"listOfMaps": [{"name": "a", "value": {"a": "x", "c": "z"}}]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("listOfMaps"), key(&[("name", json!("a"))])],
                        vec![fld("listOfMaps"), key(&[("name", json!("a"))]), fld("name")],
                        vec![
                            fld("listOfMaps"),
                            key(&[("name", json!("a"))]),
                            fld("value"),
                            fld("a"),
                        ],
                        vec![
                            fld("listOfMaps"),
                            key(&[("name", json!("a"))]),
                            fld("value"),
                            fld("c"),
                        ],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/listOfMaps_change_key_and_value`.
    #[test]
    fn list_of_maps_change_key_and_value() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"listOfMaps": [{"name": "a", "value": {"b": "x", "c": "y"}}]}),
                    ),
                    apply(
                        "default",
                        "v1",
                        json!({"listOfMaps": [{"name": "b", "value": {"a": "x", "c": "z"}}]}),
                    ),
                ],
                object: Some(json!({"listOfMaps": [{"name": "b", "value": {"a": "x", "c": "z"}}]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("listOfMaps"), key(&[("name", json!("b"))])],
                        vec![fld("listOfMaps"), key(&[("name", json!("b"))]), fld("name")],
                        vec![
                            fld("listOfMaps"),
                            key(&[("name", json!("b"))]),
                            fld("value"),
                            fld("a"),
                        ],
                        vec![
                            fld("listOfMaps"),
                            key(&[("name", json!("b"))]),
                            fld("value"),
                            fld("c"),
                        ],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/mapOfLists_change_value`.
    #[test]
    fn map_of_lists_change_value() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"mapOfLists": {"a": ["b", "c"]}})),
                    apply("default", "v1", json!({"mapOfLists": {"a": ["a", "c"]}})),
                ],
                object: Some(json!({"mapOfLists": {"a": ["a", "c"]}})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("mapOfLists"), fld("a")],
                        vec![fld("mapOfLists"), fld("a"), val(json!("a"))],
                        vec![fld("mapOfLists"), fld("a"), val(json!("c"))],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/mapOfLists_change_key_and_value`.
    #[test]
    fn map_of_lists_change_key_and_value() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"mapOfLists": {"a": ["b", "c"]}})),
                    apply("default", "v1", json!({"mapOfLists": {"b": ["a", "c"]}})),
                ],
                object: Some(json!({"mapOfLists": {"b": ["a", "c"]}})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("mapOfLists"), fld("b")],
                        vec![fld("mapOfLists"), fld("b"), val(json!("a"))],
                        vec![fld("mapOfLists"), fld("b"), val(json!("c"))],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/mapOfMaps_change_value`.
    #[test]
    fn map_of_maps_change_value() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"mapOfMaps": {"a": {"b": "x", "c": "y"}}}),
                    ),
                    apply(
                        "default",
                        "v1",
                        json!({"mapOfMaps": {"a": {"a": "x", "c": "z"}}}),
                    ),
                ],
                object: Some(json!({"mapOfMaps": {"a": {"a": "x", "c": "z"}}})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("mapOfMaps"), fld("a")],
                        vec![fld("mapOfMaps"), fld("a"), fld("a")],
                        vec![fld("mapOfMaps"), fld("a"), fld("c")],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/mapOfMaps_change_key_and_value`.
    #[test]
    fn map_of_maps_change_key_and_value() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"mapOfMaps": {"a": {"b": "x", "c": "y"}}}),
                    ),
                    apply(
                        "default",
                        "v1",
                        json!({"mapOfMaps": {"b": {"a": "x", "c": "z"}}}),
                    ),
                ],
                object: Some(json!({"mapOfMaps": {"b": {"a": "x", "c": "z"}}})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("mapOfMaps"), fld("b")],
                        vec![fld("mapOfMaps"), fld("b"), fld("a")],
                        vec![fld("mapOfMaps"), fld("b"), fld("c")],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/mapOfMapsRecursive_change_middle_key`.
    #[test]
    fn map_of_maps_recursive_change_middle_key() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"mapOfMapsRecursive": {"a": {"b": {"c": null}}}}),
                    ),
                    apply(
                        "default",
                        "v1",
                        json!({"mapOfMapsRecursive": {"a": {"d": {"c": null}}}}),
                    ),
                ],
                object: Some(json!({"mapOfMapsRecursive": {"a": {"d": {"c": null}}}})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("mapOfMapsRecursive"), fld("a")],
                        vec![fld("mapOfMapsRecursive"), fld("a"), fld("d")],
                        vec![fld("mapOfMapsRecursive"), fld("a"), fld("d"), fld("c")],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/struct_apply_remove_all`.
    #[test]
    fn struct_apply_remove_all() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"struct": {"name": "a", "value": 1}}),
                    ),
                    apply("default", "v1", json!(null)),
                ],
                object: None,
                managed: Some(managed(vec![])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/struct_apply_remove_dangling`.
    #[test]
    fn struct_apply_remove_dangling() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"struct": {"name": "a"}})),
                    apply("default", "v1", json!({"struct": null})),
                ],
                object: Some(json!({"struct": null})),
                managed: Some(managed(vec![("default", "v1", vec![vec![fld("struct")]])])),
            },
        );
    }

    /// Upstream `TestUpdateNestedType/struct_apply_update_remove_all`.
    #[test]
    fn struct_apply_update_remove_all() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"struct": {"name": "a"}})),
                    update(
                        "controller",
                        "v1",
                        json!({"struct": {"name": "a", "value": 1}}),
                    ),
                    apply("default", "v1", json!(null)),
                ],
                object: Some(json!({"struct": {"value": 1}})),
                managed: None,
            },
        );
    }

    /// Upstream `TestUpdateNestedType/struct_apply_update_dict_dangling`.
    #[test]
    fn struct_apply_update_dict_dangling() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"struct": {"name": "a"}})),
                    update(
                        "controller",
                        "v1",
                        json!({"struct": {"name": "a", "value": 1}}),
                    ),
                    apply("default", "v1", json!({"struct": {}})),
                ],
                object: Some(json!({"struct": {"value": 1}})),
                managed: None,
            },
        );
    }

    /// Upstream `TestUpdateNestedType/struct_apply_update_dict_null`.
    #[test]
    fn struct_apply_update_dict_null() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"struct": {"name": "a"}})),
                    update(
                        "controller",
                        "v1",
                        json!({"struct": {"name": "a", "value": 1}}),
                    ),
                    apply("default", "v1", json!({"struct": null})),
                ],
                object: Some(json!({"struct": {"value": 1}})),
                managed: None,
            },
        );
    }

    /// Upstream `TestUpdateNestedType/struct_apply_update_took_over`.
    #[test]
    fn struct_apply_update_took_over() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"struct": {"name": "a"}})),
                    update(
                        "controller",
                        "v1",
                        json!({"struct": {"name": "b", "value": 1}}),
                    ),
                    apply("default", "v1", json!({"struct": null})),
                ],
                object: Some(json!({"struct": {"name": "b", "value": 1}})),
                managed: None,
            },
        );
    }
}

/// Upstream `TestDuplicates`.
mod duplicates {
    use super::*;

    /// Upstream `TestDuplicates/sets/ownership/duplicates`.
    #[test]
    fn sets_ownership_duplicates() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![update("updater-one", "v1", json!({"set": [1, 1, 3, 4]}))],
                object: None,
                managed: Some(managed(vec![(
                    "updater-one",
                    "v1",
                    vec![
                        vec![fld("set")],
                        vec![fld("set"), val(json!(1))],
                        vec![fld("set"), val(json!(3))],
                        vec![fld("set"), val(json!(4))],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestDuplicates/sets/ownership/add_duplicate`.
    #[test]
    fn sets_ownership_add_duplicate() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update("updater-one", "v1", json!({"set": [1, 3, 4]})),
                    update("updater-two", "v1", json!({"set": [1, 1, 3, 4]})),
                ],
                object: None,
                managed: Some(managed(vec![
                    (
                        "updater-one",
                        "v1",
                        vec![
                            vec![fld("set")],
                            vec![fld("set"), val(json!(3))],
                            vec![fld("set"), val(json!(4))],
                        ],
                    ),
                    ("updater-two", "v1", vec![vec![fld("set"), val(json!(1))]]),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/sets/ownership/remove_duplicate`.
    #[test]
    fn sets_ownership_remove_duplicate() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update("updater-one", "v1", json!({"set": [1, 1, 3, 4]})),
                    update("updater-two", "v1", json!({"set": [1, 3, 4]})),
                ],
                object: None,
                managed: Some(managed(vec![
                    (
                        "updater-one",
                        "v1",
                        vec![
                            vec![fld("set")],
                            vec![fld("set"), val(json!(3))],
                            vec![fld("set"), val(json!(4))],
                        ],
                    ),
                    ("updater-two", "v1", vec![vec![fld("set"), val(json!(1))]]),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/sets/merging/remove_duplicate`.
    #[test]
    fn sets_merging_remove_duplicate() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update("updater", "v1", json!({"set": [1, 1, 3, 4]})),
                    apply_conflicts(
                        "applier",
                        "v1",
                        json!({"set": [1]}),
                        vec![("updater", vec![fld("set"), val(json!(1))])],
                    ),
                    force_apply("applier", "v1", json!({"set": [1]})),
                ],
                object: Some(json!({"set": [1, 3, 4]})),
                managed: Some(managed(vec![
                    (
                        "updater",
                        "v1",
                        vec![
                            vec![fld("set")],
                            vec![fld("set"), val(json!(3))],
                            vec![fld("set"), val(json!(4))],
                        ],
                    ),
                    ("applier", "v1", vec![vec![fld("set"), val(json!(1))]]),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/sets/merging/ignore_duplicate`.
    #[test]
    fn sets_merging_ignore_duplicate() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update("updater", "v1", json!({"set": [1, 1, 3, 4]})),
                    apply("applier", "v1", json!({"set": [5]})),
                ],
                object: Some(json!({"set": [1, 1, 3, 4, 5]})),
                managed: Some(managed(vec![
                    (
                        "updater",
                        "v1",
                        vec![
                            vec![fld("set")],
                            vec![fld("set"), val(json!(1))],
                            vec![fld("set"), val(json!(3))],
                            vec![fld("set"), val(json!(4))],
                        ],
                    ),
                    ("applier", "v1", vec![vec![fld("set"), val(json!(5))]]),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/list/ownership/duplicated_items`.
    #[test]
    fn list_ownership_duplicated_items() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![update(
                    "updater",
                    "v1",
                    json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}]}),
                )],
                object: None,
                managed: Some(managed(vec![(
                    "updater",
                    "v1",
                    vec![
                        vec![fld("list")],
                        vec![fld("list"), key(&[("name", json!("a"))])],
                        vec![fld("list"), key(&[("name", json!("b"))])],
                        vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                        vec![fld("list"), key(&[("name", json!("b"))]), fld("value1")],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestDuplicates/list/ownership/change_duplicated_items`.
    #[test]
    fn list_ownership_change_duplicated_items() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update(
                        "updater-one",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}]}),
                    ),
                    update(
                        "updater-two",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 3}, {"name": "b", "value1": 3}]}),
                    ),
                ],
                object: None,
                managed: Some(managed(vec![
                    (
                        "updater-one",
                        "v1",
                        vec![
                            vec![fld("list")],
                            vec![fld("list"), key(&[("name", json!("b"))])],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("value1")],
                        ],
                    ),
                    (
                        "updater-two",
                        "v1",
                        vec![vec![fld("list"), key(&[("name", json!("a"))])]],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/list/ownership/change_fields_duplicated_items`.
    #[test]
    fn list_ownership_change_fields_duplicated_items() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update(
                        "updater-one",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}]}),
                    ),
                    update(
                        "updater-two",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2, "value2": 3}, {"name": "b", "value1": 3}]}),
                    ),
                ],
                object: None,
                managed: Some(managed(vec![
                    (
                        "updater-one",
                        "v1",
                        vec![
                            vec![fld("list")],
                            vec![fld("list"), key(&[("name", json!("b"))])],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("value1")],
                        ],
                    ),
                    (
                        "updater-two",
                        "v1",
                        vec![vec![fld("list"), key(&[("name", json!("a"))])]],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/list/ownership/add_duplicated_items_different_field`.
    #[test]
    fn list_ownership_add_duplicated_items_different_field() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update(
                        "updater-one",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "b", "value1": 3}]}),
                    ),
                    update(
                        "updater-two",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value2": 3}, {"name": "b", "value1": 3}]}),
                    ),
                ],
                object: None,
                managed: Some(managed(vec![
                    (
                        "updater-one",
                        "v1",
                        vec![
                            vec![fld("list")],
                            vec![fld("list"), key(&[("name", json!("b"))])],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("value1")],
                        ],
                    ),
                    (
                        "updater-two",
                        "v1",
                        vec![vec![fld("list"), key(&[("name", json!("a"))])]],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/list/ownership/add_unrelated_to_list_with_duplicates`.
    #[test]
    fn list_ownership_add_unrelated_to_list_with_duplicates() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update(
                        "updater-one",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}]}),
                    ),
                    update(
                        "updater-two",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}]}),
                    ),
                ],
                object: None,
                managed: Some(managed(vec![
                    (
                        "updater-one",
                        "v1",
                        vec![
                            vec![fld("list")],
                            vec![fld("list"), key(&[("name", json!("a"))])],
                        ],
                    ),
                    (
                        "updater-two",
                        "v1",
                        vec![
                            vec![fld("list"), key(&[("name", json!("b"))])],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("value1")],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/list/merge/unrelated_with_duplicated_items`.
    #[test]
    fn list_merge_unrelated_with_duplicated_items() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update(
                        "updater",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}]}),
                    ),
                    force_apply("applier", "v1", json!({"unrelated": 5})),
                ],
                object: Some(
                    json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}], "unrelated": 5}),
                ),
                managed: Some(managed(vec![
                    (
                        "updater",
                        "v1",
                        vec![
                            vec![fld("list")],
                            vec![fld("list"), key(&[("name", json!("a"))])],
                            vec![fld("list"), key(&[("name", json!("b"))])],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("value1")],
                        ],
                    ),
                    ("applier", "v1", vec![vec![fld("unrelated")]]),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/list/merge/change_duplicated_item`.
    #[test]
    fn list_merge_change_duplicated_item() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update(
                        "updater",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}]}),
                    ),
                    apply_conflicts(
                        "applier",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 3}]}),
                        vec![("updater", vec![fld("list"), key(&[("name", json!("a"))])])],
                    ),
                    force_apply(
                        "applier",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 3}]}),
                    ),
                ],
                object: Some(
                    json!({"list": [{"name": "a", "value1": 3}, {"name": "b", "value1": 3}]}),
                ),
                managed: Some(managed(vec![
                    (
                        "updater",
                        "v1",
                        vec![
                            vec![fld("list")],
                            vec![fld("list"), key(&[("name", json!("b"))])],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("value1")],
                        ],
                    ),
                    (
                        "applier",
                        "v1",
                        vec![
                            vec![fld("list"), key(&[("name", json!("a"))])],
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("value1")],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/list/merge/unchanged_duplicated_item`.
    #[test]
    fn list_merge_unchanged_duplicated_item() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update(
                        "updater",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}]}),
                    ),
                    apply_conflicts(
                        "applier",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 2}]}),
                        vec![("updater", vec![fld("list"), key(&[("name", json!("a"))])])],
                    ),
                    force_apply(
                        "applier",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 3}]}),
                    ),
                ],
                object: Some(
                    json!({"list": [{"name": "a", "value1": 3}, {"name": "b", "value1": 3}]}),
                ),
                managed: Some(managed(vec![
                    (
                        "updater",
                        "v1",
                        vec![
                            vec![fld("list")],
                            vec![fld("list"), key(&[("name", json!("b"))])],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("value1")],
                        ],
                    ),
                    (
                        "applier",
                        "v1",
                        vec![
                            vec![fld("list"), key(&[("name", json!("a"))])],
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("value1")],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/list/merge/change_non_duplicated_item`.
    #[test]
    fn list_merge_change_non_duplicated_item() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    update(
                        "updater",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}]}),
                    ),
                    force_apply(
                        "applier",
                        "v1",
                        json!({"list": [{"name": "b", "value1": 4}]}),
                    ),
                ],
                object: Some(
                    json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 4}]}),
                ),
                managed: Some(managed(vec![
                    (
                        "updater",
                        "v1",
                        vec![
                            vec![fld("list")],
                            vec![fld("list"), key(&[("name", json!("a"))])],
                            vec![fld("list"), key(&[("name", json!("b"))])],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                        ],
                    ),
                    (
                        "applier",
                        "v1",
                        vec![
                            vec![fld("list"), key(&[("name", json!("b"))])],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("value1")],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestDuplicates/list/merge/apply_update_duplicates_apply_without`.
    #[test]
    fn list_merge_apply_update_duplicates_apply_without() {
        run(
            &duplicates(),
            TestCase {
                ops: vec![
                    apply(
                        "applier",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "b", "value1": 3}]}),
                    ),
                    update(
                        "updater",
                        "v1",
                        json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}]}),
                    ),
                    apply(
                        "applier",
                        "v1",
                        json!({"list": [{"name": "b", "value1": 3}]}),
                    ),
                ],
                object: Some(
                    json!({"list": [{"name": "a", "value1": 1}, {"name": "a", "value1": 2}, {"name": "b", "value1": 3}]}),
                ),
                managed: Some(managed(vec![
                    (
                        "applier",
                        "v1",
                        vec![
                            vec![fld("list"), key(&[("name", json!("b"))])],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("b"))]), fld("value1")],
                        ],
                    ),
                    (
                        "updater",
                        "v1",
                        vec![vec![fld("list"), key(&[("name", json!("a"))])]],
                    ),
                ])),
            },
        );
    }
}

/// Upstream `TestDefaultKeysFlat`.
mod default_keys_flat {
    use super::*;

    /// Upstream `TestDefaultKeysFlat/apply_missing_defaulted_key_A`.
    #[test]
    fn apply_missing_defaulted_key_a() {
        run(
            &port_list(),
            TestCase {
                ops: vec![apply(
                    "default",
                    "v1",
                    json!({"containerPorts": [{"port": 80}]}),
                )],
                object: Some(json!({"containerPorts": [{"port": 80}]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
                        ],
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
                            fld("port"),
                        ],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestDefaultKeysFlat/apply_missing_defaulted_key_B`.
    #[test]
    fn apply_missing_defaulted_key_b() {
        run(
            &port_list(),
            TestCase {
                ops: vec![apply(
                    "default",
                    "v1",
                    json!({"containerPorts": [{"port": 80}, {"port": 80, "protocol": "UDP"}]}),
                )],
                object: Some(
                    json!({"containerPorts": [{"port": 80}, {"port": 80, "protocol": "UDP"}]}),
                ),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
                        ],
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
                            fld("port"),
                        ],
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("UDP"))]),
                        ],
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("UDP"))]),
                            fld("port"),
                        ],
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("UDP"))]),
                            fld("protocol"),
                        ],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestDefaultKeysFlat/apply_missing_defaulted_key_with_conflict`.
    #[test]
    fn apply_missing_defaulted_key_with_conflict() {
        run(
            &port_list(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"containerPorts": [{"port": 80, "protocol": "TCP", "name": "foo"}]}),
                    ),
                    apply_conflicts(
                        "apply-two",
                        "v1",
                        json!({"containerPorts": [{"port": 80, "name": "bar"}]}),
                        vec![(
                            "apply-one",
                            vec![
                                fld("containerPorts"),
                                key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
                                fld("name"),
                            ],
                        )],
                    ),
                ],
                object: Some(
                    json!({"containerPorts": [{"port": 80, "protocol": "TCP", "name": "foo"}]}),
                ),
                managed: Some(managed(vec![(
                    "apply-one",
                    "v1",
                    vec![
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
                        ],
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
                            fld("port"),
                        ],
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
                            fld("protocol"),
                        ],
                        vec![
                            fld("containerPorts"),
                            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
                            fld("name"),
                        ],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestDefaultKeysFlat/apply_missing_undefaulted_defaulted_key`.
    #[test]
    fn apply_missing_undefaulted_defaulted_key() {
        run(
            &port_list(),
            TestCase {
                ops: vec![apply(
                    "default",
                    "v1",
                    json!({"containerPorts": [{"protocol": "TCP", "name": "A"}]}),
                )],
                object: Some(json!({"containerPorts": [{"protocol": "TCP", "name": "A"}]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![fld("containerPorts"), key(&[("protocol", json!("TCP"))])],
                        vec![
                            fld("containerPorts"),
                            key(&[("protocol", json!("TCP"))]),
                            fld("name"),
                        ],
                        vec![
                            fld("containerPorts"),
                            key(&[("protocol", json!("TCP"))]),
                            fld("protocol"),
                        ],
                    ],
                )])),
            },
        );
    }
}

/// Upstream `TestDefaultKeysNested`.
mod default_keys_nested {
    use super::*;

    /// Upstream `TestDefaultKeysNested/apply_missing_every_key_nested`.
    #[test]
    fn apply_missing_every_key_nested() {
        run(
            &book(),
            TestCase {
                ops: vec![apply(
                    "default",
                    "v1",
                    json!({"book": [{"sentences": [{"text": "blah"}]}]}),
                )],
                object: Some(json!({"book": [{"sentences": [{"text": "blah"}]}]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![
                            fld("book"),
                            key(&[("chapter", json!(1)), ("section", json!("A"))]),
                        ],
                        vec![
                            fld("book"),
                            key(&[("chapter", json!(1)), ("section", json!("A"))]),
                            fld("sentences"),
                            key(&[("page", json!(2)), ("line", json!(3))]),
                        ],
                        vec![
                            fld("book"),
                            key(&[("chapter", json!(1)), ("section", json!("A"))]),
                            fld("sentences"),
                            key(&[("page", json!(2)), ("line", json!(3))]),
                            fld("text"),
                        ],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestDefaultKeysNested/apply_integer_key_with_float_default`.
    #[test]
    fn apply_integer_key_with_float_default() {
        run(
            &book(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"book": [{"sentences": [{"text": "blah"}]}]}),
                    ),
                    apply(
                        "default",
                        "v1",
                        json!({"book": [{"sentences": [{"text": "blah", "page": 2}]}]}),
                    ),
                ],
                object: Some(json!({"book": [{"sentences": [{"text": "blah", "page": 2}]}]})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![
                        vec![
                            fld("book"),
                            key(&[("chapter", json!(1)), ("section", json!("A"))]),
                        ],
                        vec![
                            fld("book"),
                            key(&[("chapter", json!(1)), ("section", json!("A"))]),
                            fld("sentences"),
                            key(&[("page", json!(2)), ("line", json!(3))]),
                        ],
                        vec![
                            fld("book"),
                            key(&[("chapter", json!(1)), ("section", json!("A"))]),
                            fld("sentences"),
                            key(&[("page", json!(2)), ("line", json!(3))]),
                            fld("text"),
                        ],
                        vec![
                            fld("book"),
                            key(&[("chapter", json!(1)), ("section", json!("A"))]),
                            fld("sentences"),
                            key(&[("page", json!(2)), ("line", json!(3))]),
                            fld("page"),
                        ],
                    ],
                )])),
            },
        );
    }
}

/// Upstream `TestDeduced`.
mod deduced {
    use super::*;

    /// Upstream `TestDeduced/leaf_apply_twice`.
    #[test]
    fn leaf_apply_twice() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"numeric": 1, "string": "string"})),
                    apply(
                        "default",
                        "v1",
                        json!({"numeric": 2, "string": "string", "bool": false}),
                    ),
                ],
                object: Some(json!({"numeric": 2, "string": "string", "bool": false})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![vec![fld("numeric")], vec![fld("string")], vec![fld("bool")]],
                )])),
            },
        );
    }

    /// Upstream `TestDeduced/leaf_apply_update_apply_no_conflict`.
    #[test]
    fn leaf_apply_update_apply_no_conflict() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"numeric": 1, "string": "string"})),
                    update(
                        "controller",
                        "v1",
                        json!({"numeric": 1, "string": "string", "bool": true}),
                    ),
                    apply("default", "v1", json!({"numeric": 2, "string": "string"})),
                ],
                object: Some(json!({"numeric": 2, "string": "string", "bool": true})),
                managed: Some(managed(vec![
                    (
                        "default",
                        "v1",
                        vec![vec![fld("numeric")], vec![fld("string")]],
                    ),
                    ("controller", "v1", vec![vec![fld("bool")]]),
                ])),
            },
        );
    }

    /// Upstream `TestDeduced/leaf_apply_update_apply_with_conflict`.
    #[test]
    fn leaf_apply_update_apply_with_conflict() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"numeric": 1, "string": "string"})),
                    update(
                        "controller",
                        "v1",
                        json!({"numeric": 1, "string": "controller string", "bool": true}),
                    ),
                    apply_conflicts(
                        "default",
                        "v1",
                        json!({"numeric": 2, "string": "user string"}),
                        vec![("controller", vec![fld("string")])],
                    ),
                    force_apply(
                        "default",
                        "v1",
                        json!({"numeric": 2, "string": "user string"}),
                    ),
                ],
                object: Some(json!({"numeric": 2, "string": "user string", "bool": true})),
                managed: Some(managed(vec![
                    (
                        "default",
                        "v1",
                        vec![vec![fld("numeric")], vec![fld("string")]],
                    ),
                    ("controller", "v1", vec![vec![fld("bool")]]),
                ])),
            },
        );
    }

    /// Upstream `TestDeduced/leaf_apply_twice_remove`.
    #[test]
    fn leaf_apply_twice_remove() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"numeric": 1, "string": "string", "bool": false}),
                    ),
                    apply("default", "v1", json!({"string": "new string"})),
                ],
                object: Some(json!({"string": "new string"})),
                managed: Some(managed(vec![("default", "v1", vec![vec![fld("string")]])])),
            },
        );
    }

    /// Upstream `TestDeduced/leaf_update_remove_empty_set`.
    #[test]
    fn leaf_update_remove_empty_set() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"string": "string"})),
                    update("controller", "v1", json!({"string": "new string"})),
                ],
                object: Some(json!({"string": "new string"})),
                managed: Some(managed(vec![(
                    "controller",
                    "v1",
                    vec![vec![fld("string")]],
                )])),
            },
        );
    }

    /// Upstream `TestDeduced/apply_twice_list_is_atomic`.
    #[test]
    fn apply_twice_list_is_atomic() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "c"]})),
                    apply("default", "v1", json!({"list": ["a", "d", "c", "b"]})),
                ],
                object: Some(json!({"list": ["a", "d", "c", "b"]})),
                managed: Some(managed(vec![("default", "v1", vec![vec![fld("list")]])])),
            },
        );
    }

    /// Upstream `TestDeduced/apply_update_apply_list`.
    #[test]
    fn apply_update_apply_list() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"list": ["a", "c"]})),
                    update("controller", "v1", json!({"list": ["a", "b", "c", "d"]})),
                    force_apply("default", "v1", json!({"list": ["a", "b", "c"]})),
                ],
                object: Some(json!({"list": ["a", "b", "c"]})),
                managed: Some(managed(vec![("default", "v1", vec![vec![fld("list")]])])),
            },
        );
    }

    /// Upstream `TestDeduced/leaf_apply_remove_empty_set`.
    #[test]
    fn leaf_apply_remove_empty_set() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"string": "string"})),
                    apply("default", "v1", json!(null)),
                ],
                object: None,
                managed: Some(managed(vec![])),
            },
        );
    }

    /// Upstream `TestDeduced/apply_update_apply_nested`.
    #[test]
    fn apply_update_apply_nested() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"a": 1, "b": {"c": {"d": 2, "e": [1, 2, 3], "f": [{"name": "n", "value": 1}]}}}),
                    ),
                    update(
                        "controller",
                        "v1",
                        json!({"a": 1, "b": {"c": {"d": 3, "e": [1, 2, 3, 4], "f": [{"name": "n", "value": 2}]}}, "g": 5}),
                    ),
                    apply_conflicts(
                        "default",
                        "v1",
                        json!({"a": 2, "b": {"c": {"d": 2, "e": [3, 2, 1], "f": [{"name": "n", "value": 1}]}}}),
                        vec![
                            ("controller", vec![fld("b"), fld("c"), fld("d")]),
                            ("controller", vec![fld("b"), fld("c"), fld("e")]),
                            ("controller", vec![fld("b"), fld("c"), fld("f")]),
                        ],
                    ),
                    force_apply(
                        "default",
                        "v1",
                        json!({"a": 2, "b": {"c": {"d": 2, "e": [3, 2, 1], "f": [{"name": "n", "value": 1}]}}}),
                    ),
                ],
                object: Some(
                    json!({"a": 2, "b": {"c": {"d": 2, "e": [3, 2, 1], "f": [{"name": "n", "value": 1}]}}, "g": 5}),
                ),
                managed: None,
            },
        );
    }

    /// Upstream `TestDeduced/apply_update_apply_nested_different_version`.
    #[test]
    fn apply_update_apply_nested_different_version() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply(
                        "default",
                        "v1",
                        json!({"a": 1, "b": {"c": {"d": 2, "e": [1, 2, 3], "f": [{"name": "n", "value": 1}]}}}),
                    ),
                    update(
                        "controller",
                        "v2",
                        json!({"a": 1, "b": {"c": {"d": 3, "e": [1, 2, 3, 4], "f": [{"name": "n", "value": 2}]}}, "g": 5}),
                    ),
                    apply_conflicts(
                        "default",
                        "v3",
                        json!({"a": 2, "b": {"c": {"d": 2, "e": [3, 2, 1], "f": [{"name": "n", "value": 1}]}}}),
                        vec![
                            ("controller", vec![fld("b"), fld("c"), fld("d")]),
                            ("controller", vec![fld("b"), fld("c"), fld("e")]),
                            ("controller", vec![fld("b"), fld("c"), fld("f")]),
                        ],
                    ),
                    force_apply(
                        "default",
                        "v3",
                        json!({"a": 2, "b": {"c": {"d": 2, "e": [3, 2, 1], "f": [{"name": "n", "value": 1}]}}}),
                    ),
                ],
                object: Some(
                    json!({"a": 2, "b": {"c": {"d": 2, "e": [3, 2, 1], "f": [{"name": "n", "value": 1}]}}, "g": 5}),
                ),
                managed: None,
            },
        );
    }
}

/// Upstream `TestPreserveUnknownFields`.
mod preserve_unknown_fields {
    use super::*;

    /// Upstream `TestPreserveUnknownFields/preserve_unknown_fields`.
    #[test]
    fn preserve_unknown_fields() {
        run(
            &preserve_unknown(),
            TestCase {
                ops: vec![
                    apply("default", "v1", json!({"num": 5, "unknown": "value"})),
                    apply("default", "v1", json!({"num": 6, "unknown": "new"})),
                ],
                object: Some(json!({"num": 6, "unknown": "new"})),
                managed: Some(managed(vec![(
                    "default",
                    "v1",
                    vec![vec![fld("num")], vec![fld("unknown")]],
                )])),
            },
        );
    }
}

/// Upstream `TestMultipleAppliersSet`.
mod multiple_appliers_set {
    use super::*;

    /// Upstream `TestMultipleAppliersSet/remove_one`.
    #[test]
    fn remove_one() {
        run(
            &associative_list(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"list": [{"name": "a"}, {"name": "b"}]}),
                    ),
                    apply("apply-two", "v2", json!({"list": [{"name": "c"}]})),
                    apply("apply-one", "v3", json!({"list": [{"name": "a"}]})),
                ],
                object: Some(json!({"list": [{"name": "a"}, {"name": "c"}]})),
                managed: Some(managed(vec![
                    (
                        "apply-one",
                        "v3",
                        vec![
                            vec![fld("list"), key(&[("name", json!("a"))])],
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("name")],
                        ],
                    ),
                    (
                        "apply-two",
                        "v2",
                        vec![
                            vec![fld("list"), key(&[("name", json!("c"))])],
                            vec![fld("list"), key(&[("name", json!("c"))]), fld("name")],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestMultipleAppliersSet/same_value_no_conflict`.
    #[test]
    fn same_value_no_conflict() {
        run(
            &associative_list(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"list": [{"name": "a", "value": 0}]}),
                    ),
                    apply(
                        "apply-two",
                        "v2",
                        json!({"list": [{"name": "a", "value": 0}]}),
                    ),
                ],
                object: Some(json!({"list": [{"name": "a", "value": 0}]})),
                managed: Some(managed(vec![
                    (
                        "apply-one",
                        "v1",
                        vec![
                            vec![fld("list"), key(&[("name", json!("a"))])],
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("value")],
                        ],
                    ),
                    (
                        "apply-two",
                        "v2",
                        vec![
                            vec![fld("list"), key(&[("name", json!("a"))])],
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("value")],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestMultipleAppliersSet/change_value_yes_conflict`.
    #[test]
    fn change_value_yes_conflict() {
        run(
            &associative_list(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"list": [{"name": "a", "value": 0}]}),
                    ),
                    apply_conflicts(
                        "apply-two",
                        "v2",
                        json!({"list": [{"name": "a", "value": 1}]}),
                        vec![(
                            "apply-one",
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("value")],
                        )],
                    ),
                ],
                object: Some(json!({"list": [{"name": "a", "value": 0}]})),
                managed: Some(managed(vec![(
                    "apply-one",
                    "v1",
                    vec![
                        vec![fld("list"), key(&[("name", json!("a"))])],
                        vec![fld("list"), key(&[("name", json!("a"))]), fld("name")],
                        vec![fld("list"), key(&[("name", json!("a"))]), fld("value")],
                    ],
                )])),
            },
        );
    }

    /// Upstream `TestMultipleAppliersSet/remove_one_keep_one`.
    #[test]
    fn remove_one_keep_one() {
        run(
            &associative_list(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"list": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}),
                    ),
                    apply(
                        "apply-two",
                        "v2",
                        json!({"list": [{"name": "c"}, {"name": "d"}]}),
                    ),
                    apply("apply-one", "v3", json!({"list": [{"name": "a"}]})),
                ],
                object: Some(json!({"list": [{"name": "a"}, {"name": "c"}, {"name": "d"}]})),
                managed: Some(managed(vec![
                    (
                        "apply-one",
                        "v3",
                        vec![
                            vec![fld("list"), key(&[("name", json!("a"))])],
                            vec![fld("list"), key(&[("name", json!("a"))]), fld("name")],
                        ],
                    ),
                    (
                        "apply-two",
                        "v2",
                        vec![
                            vec![fld("list"), key(&[("name", json!("c"))])],
                            vec![fld("list"), key(&[("name", json!("d"))])],
                            vec![fld("list"), key(&[("name", json!("c"))]), fld("name")],
                            vec![fld("list"), key(&[("name", json!("d"))]), fld("name")],
                        ],
                    ),
                ])),
            },
        );
    }
}

/// Upstream `TestMultipleAppliersNestedType`.
mod multiple_appliers_nested_type {
    use super::*;

    /// Upstream `TestMultipleAppliersNestedType/remove_one_keep_one_with_two_sub_items`.
    #[test]
    fn remove_one_keep_one_with_two_sub_items() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]}),
                    ),
                    apply(
                        "apply-two",
                        "v2",
                        json!({"listOfLists": [{"name": "b", "value": ["d"]}]}),
                    ),
                    apply("apply-one", "v3", json!({"listOfLists": [{"name": "a"}]})),
                ],
                object: Some(
                    json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["d"]}]}),
                ),
                managed: Some(managed(vec![
                    (
                        "apply-one",
                        "v3",
                        vec![
                            vec![fld("listOfLists"), key(&[("name", json!("a"))])],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("a"))]),
                                fld("name"),
                            ],
                        ],
                    ),
                    (
                        "apply-two",
                        "v2",
                        vec![
                            vec![fld("listOfLists"), key(&[("name", json!("b"))])],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("b"))]),
                                fld("name"),
                            ],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("b"))]),
                                fld("value"),
                                val(json!("d")),
                            ],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestMultipleAppliersNestedType/remove_one_keep_one_with_dangling_subitem`.
    #[test]
    fn remove_one_keep_one_with_dangling_subitem() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]}),
                    ),
                    apply(
                        "apply-two",
                        "v2",
                        json!({"listOfLists": [{"name": "b", "value": ["d"]}]}),
                    ),
                    update(
                        "controller",
                        "v2",
                        json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c", "d", "e"]}]}),
                    ),
                    apply("apply-one", "v3", json!({"listOfLists": [{"name": "a"}]})),
                ],
                object: Some(
                    json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["d", "e"]}]}),
                ),
                managed: Some(managed(vec![
                    (
                        "apply-one",
                        "v3",
                        vec![
                            vec![fld("listOfLists"), key(&[("name", json!("a"))])],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("a"))]),
                                fld("name"),
                            ],
                        ],
                    ),
                    (
                        "apply-two",
                        "v2",
                        vec![
                            vec![fld("listOfLists"), key(&[("name", json!("b"))])],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("b"))]),
                                fld("name"),
                            ],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("b"))]),
                                fld("value"),
                                val(json!("d")),
                            ],
                        ],
                    ),
                    (
                        "controller",
                        "v2",
                        vec![vec![
                            fld("listOfLists"),
                            key(&[("name", json!("b"))]),
                            fld("value"),
                            val(json!("e")),
                        ]],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestMultipleAppliersNestedType/remove_one_with_dangling_subitem_keep_one`.
    #[test]
    fn remove_one_with_dangling_subitem_keep_one() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]}),
                    ),
                    apply(
                        "apply-two",
                        "v2",
                        json!({"listOfLists": [{"name": "a", "value": ["b"]}]}),
                    ),
                    update(
                        "controller",
                        "v2",
                        json!({"listOfLists": [{"name": "a", "value": ["b"]}, {"name": "b", "value": ["c", "d"]}]}),
                    ),
                    apply("apply-one", "v3", json!({"listOfLists": [{"name": "a"}]})),
                ],
                object: Some(json!({"listOfLists": [{"name": "a", "value": ["b"]}]})),
                managed: Some(managed(vec![
                    (
                        "apply-one",
                        "v3",
                        vec![
                            vec![fld("listOfLists"), key(&[("name", json!("a"))])],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("a"))]),
                                fld("name"),
                            ],
                        ],
                    ),
                    (
                        "apply-two",
                        "v2",
                        vec![
                            vec![fld("listOfLists"), key(&[("name", json!("a"))])],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("a"))]),
                                fld("name"),
                            ],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("a"))]),
                                fld("value"),
                                val(json!("b")),
                            ],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestMultipleAppliersNestedType/remove_one_with_managed_subitem_keep_one`.
    #[test]
    fn remove_one_with_managed_subitem_keep_one() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]}),
                    ),
                    apply(
                        "apply-two",
                        "v2",
                        json!({"listOfLists": [{"name": "a", "value": ["b"]}]}),
                    ),
                    update(
                        "controller",
                        "v2",
                        json!({"listOfLists": [{"name": "a", "value": ["b"]}, {"name": "b", "value": ["c", "d"]}]}),
                    ),
                    apply("apply-one", "v3", json!({"listOfLists": [{"name": "a"}]})),
                ],
                object: Some(json!({"listOfLists": [{"name": "a", "value": ["b"]}]})),
                managed: Some(managed(vec![
                    (
                        "apply-one",
                        "v3",
                        vec![
                            vec![fld("listOfLists"), key(&[("name", json!("a"))])],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("a"))]),
                                fld("name"),
                            ],
                        ],
                    ),
                    (
                        "apply-two",
                        "v2",
                        vec![
                            vec![fld("listOfLists"), key(&[("name", json!("a"))])],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("a"))]),
                                fld("name"),
                            ],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("a"))]),
                                fld("value"),
                                val(json!("b")),
                            ],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestMultipleAppliersNestedType/remove_one_keep_one_with_sub_item`.
    #[test]
    fn remove_one_keep_one_with_sub_item() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["c"]}]}),
                    ),
                    apply(
                        "apply-two",
                        "v2",
                        json!({"listOfLists": [{"name": "b", "value": ["d"]}]}),
                    ),
                    apply("apply-one", "v3", json!({"listOfLists": [{"name": "a"}]})),
                ],
                object: Some(
                    json!({"listOfLists": [{"name": "a"}, {"name": "b", "value": ["d"]}]}),
                ),
                managed: Some(managed(vec![
                    (
                        "apply-one",
                        "v3",
                        vec![
                            vec![fld("listOfLists"), key(&[("name", json!("a"))])],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("a"))]),
                                fld("name"),
                            ],
                        ],
                    ),
                    (
                        "apply-two",
                        "v2",
                        vec![
                            vec![fld("listOfLists"), key(&[("name", json!("b"))])],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("b"))]),
                                fld("name"),
                            ],
                            vec![
                                fld("listOfLists"),
                                key(&[("name", json!("b"))]),
                                fld("value"),
                                val(json!("d")),
                            ],
                        ],
                    ),
                ])),
            },
        );
    }

    /// Upstream `TestMultipleAppliersNestedType/multiple_appliers_recursive_map`.
    #[test]
    fn multiple_appliers_recursive_map() {
        run(
            &nested_type(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"mapOfMapsRecursive": {"a": {"b": null}, "c": {"d": null}}}),
                    ),
                    apply(
                        "apply-two",
                        "v2",
                        json!({"mapOfMapsRecursive": {"a": null, "c": {"d": null}}}),
                    ),
                    update(
                        "controller-one",
                        "v3",
                        json!({"mapOfMapsRecursive": {"a": {"b": {"c": null}}, "c": {"d": {"e": null}}}}),
                    ),
                    update(
                        "controller-two",
                        "v2",
                        json!({"mapOfMapsRecursive": {"a": {"b": {"c": {"d": null}}}, "c": {"d": {"e": {"f": null}}}}}),
                    ),
                    update(
                        "controller-one",
                        "v3",
                        json!({"mapOfMapsRecursive": {"a": {"b": {"c": {"d": {"e": null}}}}, "c": {"d": {"e": {"f": {"g": null}}}}}}),
                    ),
                    apply("apply-one", "v4", json!({"mapOfMapsRecursive": null})),
                ],
                object: Some(
                    json!({"mapOfMapsRecursive": {"a": null, "c": {"d": {"e": {"f": {"g": null}}}}}}),
                ),
                managed: Some(managed(vec![
                    ("apply-one", "v4", vec![vec![fld("mapOfMapsRecursive")]]),
                    (
                        "apply-two",
                        "v2",
                        vec![
                            vec![fld("mapOfMapsRecursive"), fld("a")],
                            vec![fld("mapOfMapsRecursive"), fld("c")],
                            vec![fld("mapOfMapsRecursive"), fld("c"), fld("d")],
                        ],
                    ),
                    (
                        "controller-one",
                        "v3",
                        vec![
                            vec![fld("mapOfMapsRecursive"), fld("c"), fld("d"), fld("e")],
                            vec![
                                fld("mapOfMapsRecursive"),
                                fld("c"),
                                fld("d"),
                                fld("e"),
                                fld("f"),
                                fld("g"),
                            ],
                        ],
                    ),
                    (
                        "controller-two",
                        "v2",
                        vec![vec![
                            fld("mapOfMapsRecursive"),
                            fld("c"),
                            fld("d"),
                            fld("e"),
                            fld("f"),
                        ]],
                    ),
                ])),
            },
        );
    }
}

/// Upstream `TestMultipleAppliersDeducedType`.
mod multiple_appliers_deduced_type {
    use super::*;

    /// Upstream `TestMultipleAppliersDeducedType/multiple_appliers_recursive_map_deduced`.
    #[test]
    fn multiple_appliers_recursive_map_deduced() {
        run(
            &ParseableType::deduced(),
            TestCase {
                ops: vec![
                    apply(
                        "apply-one",
                        "v1",
                        json!({"a": {"b": null}, "c": {"d": null}}),
                    ),
                    apply("apply-two", "v2", json!({"a": null, "c": {"d": null}})),
                    update(
                        "controller-one",
                        "v3",
                        json!({"a": {"b": {"c": null}}, "c": {"d": {"e": null}}}),
                    ),
                    update(
                        "controller-two",
                        "v2",
                        json!({"a": {"b": {"c": {"d": null}}}, "c": {"d": {"e": {"f": null}}}}),
                    ),
                    update(
                        "controller-one",
                        "v3",
                        json!({"a": {"b": {"c": {"d": {"e": null}}}}, "c": {"d": {"e": {"f": {"g": null}}}}}),
                    ),
                    apply("apply-one", "v4", json!(null)),
                ],
                object: Some(json!({"a": null, "c": {"d": {"e": {"f": {"g": null}}}}})),
                managed: Some(managed(vec![
                    (
                        "apply-two",
                        "v2",
                        vec![vec![fld("a")], vec![fld("c")], vec![fld("c"), fld("d")]],
                    ),
                    (
                        "controller-one",
                        "v3",
                        vec![
                            vec![fld("c"), fld("d"), fld("e")],
                            vec![fld("c"), fld("d"), fld("e"), fld("f"), fld("g")],
                        ],
                    ),
                    (
                        "controller-two",
                        "v2",
                        vec![vec![fld("c"), fld("d"), fld("e"), fld("f")]],
                    ),
                ])),
            },
        );
    }
}

/// Upstream `TestMultipleApplierAtomicMaps`.
mod multiple_applier_atomic_maps {
    use super::*;

    /// Upstream `TestMultipleApplierAtomicMaps/force`.
    #[test]
    fn force() {
        run(
            &atomic_map(),
            TestCase {
                ops: vec![
                    apply("apply-one", "v1", json!({"atomicMap": {"field1": "a"}})),
                    apply_conflicts(
                        "apply-two",
                        "v1",
                        json!({"atomicMap": {"field2": "b"}}),
                        vec![("apply-one", vec![fld("atomicMap")])],
                    ),
                    force_apply("apply-two", "v1", json!({"atomicMap": {"field2": "b"}})),
                ],
                object: Some(json!({"atomicMap": {"field2": "b"}})),
                managed: Some(managed(vec![(
                    "apply-two",
                    "v1",
                    vec![vec![fld("atomicMap")]],
                )])),
            },
        );
    }
}
