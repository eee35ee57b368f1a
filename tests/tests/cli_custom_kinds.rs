//! The CLI with custom kinds: one file holds the CronTab definition (as YAML, the way the
//! Kubernetes docs ship it), an object of it and a document of a kind nobody serves; `apply -f`
//! creates the first two and reports the third without blocking them; `get crontabs`, `get ct`
//! and `get CronTab` print the definition's printer columns; `get crd` lists it; `delete -f`
//! deletes.

use kubestore_cli::{
    apply,
    get::{GetOptions, get},
    manifest::parse,
};
use kubestore_tests::Cluster;

const MANIFEST: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                cronSpec:
                  type: string
                image:
                  type: string
                replicas:
                  type: integer
      additionalPrinterColumns:
        - name: Spec
          type: string
          jsonPath: .spec.cronSpec
        - name: Replicas
          type: integer
          jsonPath: .spec.replicas
        - name: Age
          type: date
          jsonPath: .metadata.creationTimestamp
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames:
      - ct
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: not-served
spec: {}
---
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-new-cron-object
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
  replicas: 2
"#;

#[tokio::test(flavor = "multi_thread")]
async fn apply_get_and_delete_custom_kinds_through_the_cli() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let ch = kubestore_cli::connect(&url).await.expect("connect");
    let docs = parse(MANIFEST).expect("every document parses");
    let (lines, ok) = apply::apply(&ch, "default", docs.clone()).await;
    assert!(!ok, "the Deployment is reported: {lines:?}");
    assert_eq!(
        lines[0],
        "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created"
    );
    assert!(lines[1].contains("Deployment"), "{lines:?}");
    assert_eq!(
        lines[2],
        "crontab.stable.example.com/my-new-cron-object created"
    );
    let (lines, _) = apply::apply(&ch, "default", docs.clone()).await;
    assert_eq!(
        (lines[0].as_str(), lines[2].as_str()),
        (
            "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com unchanged",
            "crontab.stable.example.com/my-new-cron-object unchanged"
        )
    );

    for name in [
        "crontabs",
        "ct",
        "CronTab",
        "crontab",
        "crontabs.stable.example.com",
    ] {
        let mut out = Vec::new();
        get(
            &ch,
            name,
            &GetOptions {
                namespace: "default".into(),
                ..Default::default()
            },
            |s| out.push(s),
        )
        .await
        .unwrap_or_else(|e| panic!("get {name}: {e}"));
        let table = out.join("\n");
        let mut rows = table.lines();
        let header: Vec<&str> = rows.next().expect("header").split_whitespace().collect();
        assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "AGE"], "{table}");
        let row = rows.next().expect("a row");
        assert!(row.starts_with("my-new-cron-object"), "{table}");
        assert!(
            row.contains("* * * * */5") && row.contains(" 2 "),
            "{table}"
        );
    }
    let mut out = Vec::new();
    get(
        &ch,
        "ct",
        &GetOptions {
            namespace: "default".into(),
            name: Some("my-new-cron-object".into()),
            output: "json".into(),
            ..Default::default()
        },
        |s| out.push(s),
    )
    .await
    .expect("get -o json");
    let json: serde_json::Value = serde_json::from_str(&out.join("")).expect("json");
    assert_eq!(
        json["spec"]["replicas"],
        serde_json::json!(2),
        "whole numbers print whole"
    );
    assert_eq!(json["kind"], "CronTab");
    let mut out = Vec::new();
    get(&ch, "crd", &GetOptions::default(), |s| out.push(s))
        .await
        .expect("get crd");
    assert!(
        out.join("\n").contains("crontabs.stable.example.com"),
        "{out:?}"
    );

    let (lines, _) = apply::delete(&ch, "default", docs).await;
    assert!(
        lines.contains(&"crontab.stable.example.com \"my-new-cron-object\" deleted".to_string()),
        "{lines:?}"
    );
    assert!(
        lines.contains(
            &"customresourcedefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" deleted"
                .to_string()
        ),
        "{lines:?}"
    );
}

/// A definition applied by one command and its object by the next, at once (the docs' two
/// lines): the second finds the definition not served yet and waits for it to be established,
/// instead of "no matches for kind".
#[tokio::test(flavor = "multi_thread")]
async fn an_object_applied_right_after_its_definition_by_another_command_waits_for_it() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let ch = kubestore_cli::connect(&url).await.expect("connect");
    let docs = parse(MANIFEST).expect("every document parses");
    let kind = |d: &kubestore_cli::manifest::Parsed| d.kind().to_string();
    let definition: Vec<_> = docs
        .iter()
        .filter(|d| kind(d) == "CustomResourceDefinition")
        .cloned()
        .collect();
    let object: Vec<_> = docs
        .iter()
        .filter(|d| kind(d) == "CronTab")
        .cloned()
        .collect();
    let (lines, ok) = apply::apply(&ch, "default", definition).await;
    assert!(ok, "{lines:?}");
    let (lines, ok) = apply::apply(&ch, "default", object).await;
    assert!(ok, "{lines:?}");
    assert_eq!(
        lines,
        vec!["crontab.stable.example.com/my-new-cron-object created".to_string()]
    );
    // A kind no definition defines is still refused.
    let unknown = parse("apiVersion: nobody.example.com/v1\nkind: Nothing\nmetadata:\n  name: x\n")
        .expect("parses");
    let (lines, ok) = apply::apply(&ch, "default", unknown).await;
    assert!(!ok && lines[0].contains("no matches for kind"), "{lines:?}");
}
