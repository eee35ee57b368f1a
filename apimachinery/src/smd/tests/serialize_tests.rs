//! `FieldsV1` tests, ported from upstream's `fieldpath/serialize_test.go` and
//! `serialize-pe_test.go` (each test named after its upstream test).

use serde_json::json;

use crate::smd::{
    path::PathElement,
    serialize::{PathElementError, deserialize_path_element, serialize_path_element},
    set::Set,
};

const GOLDEN: &[&str] = &[
    r#"{"f:aaa":{},"f:aab":{},"f:aac":{},"f:aad":{},"f:aae":{},"f:aaf":{},"k:{\"name\":\"first\"}":{},"k:{\"name\":\"second\"}":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{},"k:{\"port\":443,\"protocol\":\"udp\"}":{},"v:1":{},"v:2":{},"v:3":{},"v:\"aa\"":{},"v:\"ab\"":{},"v:true":{},"i:1":{},"i:2":{},"i:3":{},"i:4":{}}"#,
    r#"{"f:aaa":{"k:{\"name\":\"second\"}":{"v:3":{"f:aab":{}}},"v:3":{},"v:true":{}},"f:aab":{"f:aaa":{},"f:aaf":{"k:{\"port\":443,\"protocol\":\"udp\"}":{"k:{\"port\":443,\"protocol\":\"tcp\"}":{}}},"k:{\"name\":\"first\"}":{}},"f:aac":{"f:aaa":{"v:1":{}},"f:aac":{},"v:3":{"k:{\"name\":\"second\"}":{}}},"f:aad":{"f:aac":{"v:1":{}},"f:aaf":{"k:{\"name\":\"first\"}":{"k:{\"name\":\"first\"}":{}}},"i:1":{"i:1":{},"i:3":{"v:true":{}}}},"f:aae":{"f:aae":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"k:{\"port\":443,\"protocol\":\"udp\"}":{}},"i:4":{"f:aaf":{}}},"f:aaf":{"i:1":{"f:aac":{}},"i:2":{},"i:3":{}},"k:{\"name\":\"first\"}":{"f:aad":{"f:aaf":{}}},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"f:aaa":{"f:aad":{}}},"k:{\"port\":443,\"protocol\":\"udp\"}":{"f:aac":{},"k:{\"name\":\"first\"}":{"i:3":{}},"k:{\"port\":443,\"protocol\":\"udp\"}":{"i:4":{}}},"v:1":{"f:aac":{"i:4":{}},"f:aaf":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{}},"v:2":{"f:aad":{"f:aaf":{}},"i:1":{}},"v:3":{"f:aaa":{},"k:{\"name\":\"first\"}":{},"i:2":{}},"v:\"aa\"":{"f:aab":{"f:aaf":{}},"f:aae":{},"k:{\"name\":\"first\"}":{"f:aad":{}},"i:2":{}},"v:\"ab\"":{"f:aaf":{"i:4":{}},"k:{\"port\":443,\"protocol\":\"tcp\"}":{},"k:{\"port\":443,\"protocol\":\"udp\"}":{},"v:1":{"k:{\"port\":443,\"protocol\":\"udp\"}":{}},"i:1":{"f:aae":{"i:4":{}}}},"v:true":{"k:{\"name\":\"second\"}":{"f:aaa":{}},"i:2":{"k:{\"port\":443,\"protocol\":\"tcp\"}":{}}},"i:1":{"i:3":{"f:aaf":{}}},"i:2":{"f:aae":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"v:1":{}}},"i:3":{"f:aab":{"v:true":{"v:\"aa\"":{}}},"f:aaf":{},"i:1":{}},"i:4":{"v:\"aa\"":{"f:aab":{"k:{\"name\":\"second\"}":{}}}}}"#,
    r#"{"f:spec":{".":{},"f:apps":{".":{},"k:{\"name\":\" app-💻\"}":{".":{},"f:container":{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\"name\":\"port 🔑\"}":{".":{},"f:containerPort":{},"f:name":{}}}},"f:name":{}},"k:{\"name\":\" app-🚀\"}":{".":{},"f:container":{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\"name\":\"port-✅ \"}":{".":{},"f:containerPort":{},"f:name":{}}}},"f:name":{}}}}}"#,
];

const NON_NORMALIZED: &[(&str, &str)] = &[
    (
        r#"{
  "f:aad": {},
  "f:aaa": {},
  "f:aab": {},
  "f:aac": {},
  "f:aae": {},
  "f:aaf": {},


  "k:{\"name\":\"first\"}": {},
  "k:{\"name\":\"second\"}": {},
  "k:{\"port\":443,\"protocol\":\"tcp\"}": {},
  "k:{ \"protocol\":\"udp\",\"port\":443}": {},
  "v:1": {},

  "v:2": {},
  "v: 3": {},
  "v:\"aa\"": {},

  "v:\"ab\"": {},
  "v:true": {},
  "i:1": {},
  	"i:2": {},
  "i:3": {}  ,
  "i:4":    {}
}"#,
        r#"{"f:aaa":{},"f:aab":{},"f:aac":{},"f:aad":{},"f:aae":{},"f:aaf":{},"k:{\"name\":\"first\"}":{},"k:{\"name\":\"second\"}":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{},"k:{\"port\":443,\"protocol\":\"udp\"}":{},"v:1":{},"v:2":{},"v:3":{},"v:\"aa\"":{},"v:\"ab\"":{},"v:true":{},"i:1":{},"i:2":{},"i:3":{},"i:4":{}}"#,
    ),
    (
        r#"{
  "f:aaa": {
    "k:{\"name\":\"second\"}": {
      "v:3": {
        "f:aab": {}
      }
    },
    "v:3": {},
    "v:true": {}
  },
  "f:aab": {
    "f:aaa": {},
    "f:aaf": {
      "k:{\"port\":443,\"protocol\":\"udp\"}": {
        "k:{\"port\":443,\"protocol\":\"tcp\"}": {}
      }
    },
    "k:{\"name\":\"first\"}": {}
  },
  "f:aac": {
    "f:aaa": {
      "v:1": {}
    },
    "f:aac": {},
    "v:3": {
      "k:{\"name\":\"second\"}": {}
    }
  },
  "f:aad": {
    "f:aac": {
      "v:1": {}
    },
    "f:aaf": {
      "k:{\"name\":\"first\"}": {
        "k:{\"name\":\"first\"}": {}
      }
    },
    "i:1": {
      "i:1": {},
      "i:3": {
        "v:true": {}
      }
    }
  },
  "f:aae": {
    "f:aae": {},
    "k:{\"port\":443,\"protocol\":\"tcp\"}": {
      "k:{\"port\":443,\"protocol\":\"udp\"}": {}
    },
    "i:4": {
      "f:aaf": {}
    }
  },
  "f:aaf": {
    "i:1": {
      "f:aac": {}
    },
	"i:3": {},
    "i:2": {}
  },
  "k:{\"name\":\"first\"}": {
    "f:aad": {
      "f:aaf": {}
    }
  },
  "k:{\"port\":443,\"protocol\":\"tcp\"}": {
    "f:aaa": {
      "f:aad": {}
    }
  },
  "k:{\"port\":443,\"protocol\":\"udp\"}": {
    "f:aac": {},
    "k:{\"name\":\"first\"}": {
      "i:3": {}
    },
    "k:{\"port\":443,\"protocol\":\"udp\"}": {
      "i:4": {}
    }
  },
   "v:2": {
    "f:aad": {
      "f:aaf": {}
    },
    "i:1": {}
  },
  "v:1": {
    "f:aac": {
      "i:4": {}
    },
    "f:aaf": {},
    "k:{\"port\":443,\"protocol\":\"tcp\"}": {}
  },
  "v:3": {
    "f:aaa": {},
    "k:{\"name\":\"first\"}": {},
    "i:2": {}
  },
  "v:\"aa\"": {
    "f:aab": {
      "f:aaf": {}
    },
    "f:aae": {},
    "k:{\"name\":\"first\"}": {
      "f:aad": {}
    },
    "i:2": {}
  },
  "v:\"ab\"": {
    "f:aaf": {
      "i:4": {}
    },
    "k:{\"port\":443,\"protocol\":\"tcp\"}": {},
    "k:{\"port\":443,\"protocol\":\"udp\"}": {},
    "v:1": {
      "k:{\"port\":443,\"protocol\":\"udp\"}": {}
    },
    "i:1": {
      "f:aae": {
        "i:4": {}
      }
    }
  },
  
  "v:true": {
    "k:{\"name\":\"second\"}": {
      "f:aaa": {}
    },
    "i:2": {
      "k:{\"port\":443,\"protocol\":\"tcp\"}": {}
    }
  },

  
  "i:1": {
    "i:3": {
      "f:aaf": {}
    }
  },

  "i:3": {
    "f:aab": {
      "v:true": {
        "v:\"aa\"": {}
      }
    },
    "f:aaf": {},
    "i:1": {}
  },

  "i:2": {
    "f:aae": {},
    "k:{\"port\":443,\"protocol\":\"tcp\"}": {
      "v:1": {}
    }
  },

  "i:4": {
    "v:\"aa\"": {
      "f:aab": {
        "k:{\"name\":\"second\"}": {}
      }
    }
  }
}"#,
        r#"{"f:aaa":{"k:{\"name\":\"second\"}":{"v:3":{"f:aab":{}}},"v:3":{},"v:true":{}},"f:aab":{"f:aaa":{},"f:aaf":{"k:{\"port\":443,\"protocol\":\"udp\"}":{"k:{\"port\":443,\"protocol\":\"tcp\"}":{}}},"k:{\"name\":\"first\"}":{}},"f:aac":{"f:aaa":{"v:1":{}},"f:aac":{},"v:3":{"k:{\"name\":\"second\"}":{}}},"f:aad":{"f:aac":{"v:1":{}},"f:aaf":{"k:{\"name\":\"first\"}":{"k:{\"name\":\"first\"}":{}}},"i:1":{"i:1":{},"i:3":{"v:true":{}}}},"f:aae":{"f:aae":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"k:{\"port\":443,\"protocol\":\"udp\"}":{}},"i:4":{"f:aaf":{}}},"f:aaf":{"i:1":{"f:aac":{}},"i:2":{},"i:3":{}},"k:{\"name\":\"first\"}":{"f:aad":{"f:aaf":{}}},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"f:aaa":{"f:aad":{}}},"k:{\"port\":443,\"protocol\":\"udp\"}":{"f:aac":{},"k:{\"name\":\"first\"}":{"i:3":{}},"k:{\"port\":443,\"protocol\":\"udp\"}":{"i:4":{}}},"v:1":{"f:aac":{"i:4":{}},"f:aaf":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{}},"v:2":{"f:aad":{"f:aaf":{}},"i:1":{}},"v:3":{"f:aaa":{},"k:{\"name\":\"first\"}":{},"i:2":{}},"v:\"aa\"":{"f:aab":{"f:aaf":{}},"f:aae":{},"k:{\"name\":\"first\"}":{"f:aad":{}},"i:2":{}},"v:\"ab\"":{"f:aaf":{"i:4":{}},"k:{\"port\":443,\"protocol\":\"tcp\"}":{},"k:{\"port\":443,\"protocol\":\"udp\"}":{},"v:1":{"k:{\"port\":443,\"protocol\":\"udp\"}":{}},"i:1":{"f:aae":{"i:4":{}}}},"v:true":{"k:{\"name\":\"second\"}":{"f:aaa":{}},"i:2":{"k:{\"port\":443,\"protocol\":\"tcp\"}":{}}},"i:1":{"i:3":{"f:aaf":{}}},"i:2":{"f:aae":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"v:1":{}}},"i:3":{"f:aab":{"v:true":{"v:\"aa\"":{}}},"f:aaf":{},"i:1":{}},"i:4":{"v:\"aa\"":{"f:aab":{"k:{\"name\":\"second\"}":{}}}}}"#,
    ),
];

const VALID_DOCUMENTS: &[(&str, &str)] = &[
    ("trailingSpace", "{\"f:a\":{}} "),
    ("trailingTab", "{\"f:a\":{}}\t"),
    ("trailingNewline", "{\"f:a\":{}}\n"),
    ("trailingCarriageReturn", "{\"f:a\":{}}\r"),
    ("trailingMultipleSpaces", "{\"f:a\":{}}     "),
    ("trailingMixedWhitespace", "{\"f:a\":{}} \t\n\r "),
    ("leadingSpace", " {\"f:a\":{}}"),
    ("leadingTab", "\t{\"f:a\":{}}"),
    ("leadingNewline", "\n{\"f:a\":{}}"),
    ("leadingCarriageReturn", "\r{\"f:a\":{}}"),
    ("leadingMultipleSpaces", "     {\"f:a\":{}}"),
    ("leadingMixedWhitespace", " \t\n\r {\"f:a\":{}}"),
    ("surroundingMixedWhitespace", " \t\n\r {\"f:a\":{}} \t\n\r "),
    ("whitespaceAroundEmptySet", "  {}  "),
    ("whitespaceBetweenTokens", "{ \"f:a\" : {} }"),
    ("whitespaceBeforeKey", "{\n\t\"f:a\":{}}"),
    ("whitespaceAfterColon", "{\"f:a\":     {}}"),
    ("bareNull", "null"),
    ("nullWithSurroundingWhitespace", " null "),
];

const INVALID_DOCUMENTS: &[(&str, &str)] = &[
    ("rootArray", "[]"),
    ("rootNumber", "42"),
    ("rootString", "\"hi\""),
    ("empty", ""),
    ("whitespaceOnly", "   "),
    ("numberAsKey", "{1:{}}"),
    ("trailingCommaAfterEntry", "{\"f:a\":{},}"),
    ("closedBeforeColon", "{\"f:a\" }:{}}"),
    ("closedBeforeValue", "{\"f:a\":}"),
    ("valueIsNumber", "{\"f:a\":1}"),
    ("valueIsArray", "{\"f:a\":[]}"),
    ("valueOpenedAsArrayClosedAsObject", "{\"f:a\":[}"),
    ("valueOpenedAsObjectClosedAsArray", "{\"f:a\":{]}"),
    ("doubleCommaBetweenEntries", "{\"f:a\":{},,\"f:b\":{}}"),
    ("missingCommaBetweenEntries", "{\"f:a\":{} \"f:b\":{}}"),
    ("doubleColonAfterKey", "{\"f:a\"::{}}"),
    ("colonWithoutKey", "{:1}"),
    ("keyWithoutColon", "{\"f:a\"}"),
    ("leadingCommaInsideValue", "{\"f:a\":{,}}"),
    ("bareCloseBrace", "}"),
    ("keyEmptyString", "{\"\":{}}"),
    ("keyMissingColon", "{\"x\":{}}"),
    ("keyOnlyColon", "{\":\":{}}"),
    ("unclosedAfterOpen", "{"),
    ("unclosedAfterValue", "{\"f:a\":{}"),
    ("unclosedAfterTrailingComma", "{\"f:a\":{},"),
    ("truncatedOpenQuoteOnly", "{\""),
    ("truncatedKeyTypeOnly", "{\"f"),
    ("truncatedKeySeparator", "{\"f:"),
    ("truncatedKeyNoCloseQuote", "{\"f:a"),
    ("truncatedAfterKey", "{\"f:a\""),
    ("truncatedAfterColon", "{\"f:a\":"),
    ("truncatedAfterNestedOpen", "{\"f:a\":{"),
    ("truncatedAfterNestedKey", "{\"f:a\":{\"f:b\""),
    ("truncatedAfterNestedColon", "{\"f:a\":{\"f:b\":"),
    ("truncatedAfterNestedValue", "{\"f:a\":{\"f:b\":{}"),
    ("truncatedAfterNestedComma", "{\"f:a\":{\"f:b\":{},"),
    ("truncatedKeyWithEscape", "{\"f:a\\"),
    ("truncatedKeyInsideUnicodeEscape", "{\"f:\\u00"),
    ("truncatedAtSecondKey", "{\"f:a\":{}, \"f"),
    ("truncatedAtSecondKeyClose", "{\"f:a\":{}, \"f:b"),
    ("trailingCloseBrace", "{\"f:a\":{}}}"),
    ("trailingObject", "{\"f:a\":{}}{}"),
    ("trailingString", "{\"f:a\":{}}\"string\""),
    ("trailingNumber", "{\"f:a\":{}}42"),
    ("trailingWhitespaceThenCloseBrace", "{\"f:a\":{}}  }"),
    ("trailingWhitespaceThenObject", "{\"f:a\":{}}  {}"),
    ("trailingWhitespaceThenString", "{\"f:a\":{}}  \"x\""),
    ("trailingWhitespaceThenNumber", "{\"f:a\":{}}\n42"),
];

#[test]
fn serialize_v1_golden_data() {
    for golden in GOLDEN {
        let set = Set::from_fields_v1(golden).unwrap_or_else(|e| panic!("{golden}: {e}"));
        assert_eq!(set.to_fields_v1(), *golden);
    }
}

#[test]
fn deserialize_for_valid_non_normalized() {
    for (input, normalized) in NON_NORMALIZED {
        let set = Set::from_fields_v1(input).unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_eq!(set.to_fields_v1(), *normalized);
    }
}

#[test]
fn set_from_json_token_type_errors() {
    for (name, input) in INVALID_DOCUMENTS {
        assert!(
            Set::from_fields_v1(input).is_err(),
            "{name}: {input:?} accepted"
        );
    }
}

#[test]
fn set_from_json() {
    for (name, input) in VALID_DOCUMENTS {
        if let Err(e) = Set::from_fields_v1(input) {
            panic!("{name}: {input:?}: {e}");
        }
    }
}

#[test]
fn drop_unknown() {
    let set = Set::from_fields_v1(r#"{"f:aaa":{},"r:aab":{}}"#).expect("valid");
    assert_eq!(set.to_fields_v1(), r#"{"f:aaa":{}}"#);
}

/// A deterministic stand-in for upstream's random path maker (`TestSerializeV1`).
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }

    fn element(&mut self) -> PathElement {
        match self.next(4) {
            0 => PathElement::field(["aaa", "aab", "aac", "aad", "aae", "aaf"][self.next(6)]),
            1 => match self.next(3) {
                0 => PathElement::key([("name", json!("first"))]),
                1 => PathElement::key([("name", json!("second"))]),
                _ => PathElement::key([("port", json!(443)), ("protocol", json!("tcp"))]),
            },
            2 => PathElement::value(
                [json!(1), json!(2), json!("aa"), json!(true), json!(1.5)][self.next(5)].clone(),
            ),
            _ => PathElement::index(self.next(5) as i64),
        }
    }
}

#[test]
fn serialize_v1() {
    let mut rng = Rng(42);
    for _ in 0..200 {
        let mut set = Set::new();
        for _ in 0..50 {
            let len = 2 + rng.next(4);
            let path: Vec<PathElement> = (0..len).map(|_| rng.element()).collect();
            set.insert(&path);
        }
        let text = set.to_fields_v1();
        let back = Set::from_fields_v1(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(back, set, "{text}");
        assert_eq!(back.to_fields_v1(), text);
    }
}

#[test]
fn path_element_round_trip() {
    let cases: Vec<(&str, PathElement)> = vec![
        ("i:0", PathElement::index(0)),
        ("i:1234", PathElement::index(1234)),
        ("f:", PathElement::field("")),
        ("f:spec", PathElement::field("spec")),
        (
            "f:more-complicated-string",
            PathElement::field("more-complicated-string"),
        ),
        (
            "f: string-with-spaces   ",
            PathElement::field(" string-with-spaces   "),
        ),
        (
            r#"k:{"name":"my-container"}"#,
            PathElement::key([("name", json!("my-container"))]),
        ),
        (
            r#"k:{"name":"   name with spaces   "}"#,
            PathElement::key([("name", json!("   name with spaces   "))]),
        ),
        (
            r#"k:{"port":"8080","protocol":"TCP"}"#,
            PathElement::key([("port", json!("8080")), ("protocol", json!("TCP"))]),
        ),
        (
            r#"k:{"optionalField":null}"#,
            PathElement::key([("optionalField", json!(null))]),
        ),
        (
            r#"k:{"jsonField":{"A":1,"B":null,"C":"D","E":{"F":"G"}}}"#,
            PathElement::key([(
                "jsonField",
                json!({"A": 1, "B": null, "C": "D", "E": {"F": "G"}}),
            )]),
        ),
        (
            r#"k:{"listField":["1","2","3"]}"#,
            PathElement::key([("listField", json!(["1", "2", "3"]))]),
        ),
        ("v:null", PathElement::value(json!(null))),
        (
            r#"v:"some-string""#,
            PathElement::value(json!("some-string")),
        ),
        ("v:1234", PathElement::value(json!(1234))),
        (
            r#"v:{"some":"json"}"#,
            PathElement::value(json!({"some": "json"})),
        ),
        (
            r#"k:{"name":"app-🚀"}"#,
            PathElement::key([("name", json!("app-🚀"))]),
        ),
        (
            r#"k:{"name":"你好世界"}"#,
            PathElement::key([("name", json!("你好世界"))]),
        ),
        ("f:spec-🚀", PathElement::field("spec-🚀")),
        (r"f:spec-\n", PathElement::field(r"spec-\n")),
    ];
    for (text, pe) in cases {
        let got = deserialize_path_element(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(got, pe, "{text}");
        assert_eq!(serialize_path_element(&pe), text);
    }
}

#[test]
fn path_element_ignore_unknown() {
    assert_eq!(
        deserialize_path_element("r:Hello"),
        Err(PathElementError::UnknownType)
    );
}

#[test]
fn deserialize_path_element_error() {
    for text in [
        "",
        "no-colon",
        "i:index is not a number",
        "i:1.23",
        "i:",
        "v:invalid json",
        "v:",
        "k:invalid json",
        r#"k:{"name":invalid}"#,
        r#"v:{"some":" \x41"}"#,
        "v",
        "k",
        "f",
        "i",
        r#"v:{"a":"b""#,
        r#"k:{"a":"b""#,
        "i: 0",
        "i:0 ",
        r#"v:{"some":"json"} {"other":"json"}"#,
        r#"k:{"name":"my-container"} {"other":"my-container"}"#,
        r#"v:{"some":"json"} garbage"#,
        r#"k:{"name":"my-container"} garbage"#,
    ] {
        match deserialize_path_element(text) {
            Err(PathElementError::Invalid(_)) => {}
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

/// Go's `encoding/json` escaping in keys (`<`, `>`, `&`), as upstream writes them.
#[test]
fn serialize_escapes_html_like_go() {
    let set = Set::from_paths([vec![
        PathElement::field("data"),
        PathElement::key([("name", json!("a<b>&c"))]),
    ]]);
    assert_eq!(
        set.to_fields_v1(),
        r#"{"f:data":{"k:{\"name\":\"a\\u003cb\\u003e\\u0026c\"}":{}}}"#
    );
}

/// The example of the managedFields documentation: members that also have children carry `.`.
#[test]
fn serialize_members_with_children() {
    let text = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{}}}}}"#;
    let set = Set::from_fields_v1(text).expect("valid");
    assert!(set.has(&[PathElement::field("metadata"), PathElement::field("labels")]));
    assert!(set.has(&[
        PathElement::field("spec"),
        PathElement::field("containers"),
        PathElement::key([("name", json!("nginx"))]),
        PathElement::field("image"),
    ]));
    assert!(!set.has(&[PathElement::field("spec")]));
    assert_eq!(set.to_fields_v1(), text);
}
