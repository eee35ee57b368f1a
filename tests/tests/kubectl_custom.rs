//! kubectl on custom kinds as on kube-apiserver (rest-api.md §11 cases 1, 6, 7, 9 and 13): a
//! definition applied from a manifest, then its objects applied, listed with the definition's
//! printer columns, described, patched (JSON merge and JSON patch; the strategic merge patch,
//! kubectl's default, refused with upstream's 415), edited, and validated by the server
//! (`fieldValidation=Strict` refuses a field the schema does not have; `Warn` warns).

use kubestore_tests::kube::{KubeCluster, Kubectl, crontab_yaml, row, table};

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_objects_are_listed_with_their_printer_columns() {
    let c = KubeCluster::start().await;
    c.crontab_crd();
    let objects = [
        crontab_yaml("nightly", "0 0 * * *", 2),
        crontab_yaml("hourly", "0 * * * *", 1),
    ]
    .join("---\n");
    let f = c.file("cts.yaml", &objects);
    let r = c.k(&["apply", "-f", path(&f)]).run().ok();
    assert_eq!(
        r.out(),
        "crontab.stable.example.com/nightly created\ncrontab.stable.example.com/hourly created",
        "{r}"
    );
    let r = c.k(&["apply", "-f", path(&f)]).run().ok();
    assert_eq!(
        r.out(),
        "crontab.stable.example.com/nightly unchanged\ncrontab.stable.example.com/hourly unchanged",
        "{r}"
    );
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        for kind in ["ct", "crontabs", "crontab.stable.example.com"] {
            let r = c.kubectl(v, &["get", kind]).run().ok();
            assert_eq!(
                table(r.out(), 1),
                [
                    row(&["NAME", "SPEC", "REPLICAS"]),
                    row(&["hourly", "0 * * * *", "1"]),
                    row(&["nightly", "0 0 * * *", "2"]),
                ],
                "{} get {kind}: {r}",
                v.minor()
            );
            assert!(
                r.out().lines().next().unwrap_or_default().ends_with("AGE"),
                "{r}"
            );
        }
    }
    // A changed manifest: a JSON merge patch (no strategic merge for custom kinds).
    let f = c.file("ct2.yaml", &crontab_yaml("nightly", "0 0 * * *", 3));
    let r = c.k(&["apply", "-f", path(&f)]).run().ok();
    assert_eq!(
        r.out(),
        "crontab.stable.example.com/nightly configured",
        "{r}"
    );
    let r = c
        .k(&["get", "ct", "nightly", "-o", "jsonpath={.spec.replicas}"])
        .run()
        .ok();
    assert_eq!(r.out(), "3", "{r}");
    let r = c.k(&["describe", "ct", "nightly"]).run().ok();
    for line in [
        "Name:         nightly",
        "Namespace:    default",
        "API Version:  stable.example.com/v1",
        "Kind:         CronTab",
        "  Replicas:   3",
    ] {
        assert!(r.out().lines().any(|l| l == line), "no {line:?}:{r}");
    }
    let r = c.k(&["get", "ct", "nosuch"]).run().fails();
    assert_eq!(
        r.err(),
        "Error from server (NotFound): crontabs.stable.example.com \"nosuch\" not found",
        "{r}"
    );
    let r = c.k(&["delete", "ct", "hourly"]).run().ok();
    assert_eq!(
        r.out(),
        "crontab.stable.example.com \"hourly\" deleted from default namespace",
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn custom_objects_are_patched_and_edited_without_strategic_merge() {
    let c = KubeCluster::start().await;
    c.crontab_crd();
    c.create("ct.yaml", &crontab_yaml("nightly", "0 0 * * *", 2))
        .ok();
    let r = c
        .k(&["patch", "ct", "nightly", "-p", r#"{"spec":{"replicas":4}}"#])
        .run()
        .fails();
    assert_eq!(
        r.err(),
        "error: application/strategic-merge-patch+json is not supported by stable.example.com/v1, Kind=CronTab: the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        "{r}"
    );
    assert!(r.requested(&["PATCH", "415"]), "{r}");
    let r = c
        .k(&[
            "patch",
            "ct",
            "nightly",
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":4}}"#,
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "crontab.stable.example.com/nightly patched", "{r}");
    let r = c
        .k(&[
            "patch",
            "ct",
            "nightly",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/spec/image","value":"other"}]"#,
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "crontab.stable.example.com/nightly patched", "{r}");
    let editor = c.script("editor.sh", r#"sed -i 's/replicas: 4/replicas: 5/' "$1""#);
    let r = c
        .k(&["edit", "ct", "nightly"])
        .env("KUBE_EDITOR", &editor)
        .run()
        .ok();
    assert_eq!(r.out(), "crontab.stable.example.com/nightly edited", "{r}");
    let r = c
        .k(&[
            "get",
            "ct",
            "nightly",
            "-o",
            "jsonpath={.spec.replicas} {.spec.image}",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "5 other", "{r}");
    c.k(&["label", "ct", "nightly", "team=a"]).run().ok();
    let r = c.k(&["get", "ct", "-l", "team=a", "-o", "name"]).run().ok();
    assert_eq!(r.out(), "crontab.stable.example.com/nightly", "{r}");
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_fields_of_custom_objects_follow_field_validation() {
    let c = KubeCluster::start().await;
    c.crontab_crd();
    let typo = c.file(
        "typo.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: typo\nspec:\n  cronSpec: \"* * * * */5\"\n  replcas: 2\n",
    );
    // kubectl asks for Strict (the definition's group version is in /openapi/v3): upstream
    // refuses the field pruning would drop.
    let r = c.k(&["create", "-f", path(&typo)]).run().fails();
    assert!(
        r.requested(&["POST", "fieldValidation=Strict", "400"]),
        "{r}"
    );
    assert_eq!(
        r.err(),
        format!(
            "Error from server (BadRequest): error when creating \"{}\": CronTab in version \"v1\" cannot be handled as a CronTab: strict decoding error: unknown field \"spec.replcas\"",
            path(&typo)
        ),
        "{r}"
    );
    let r = c
        .k(&["create", "-f", path(&typo), "--validate=warn"])
        .run()
        .ok();
    assert_eq!(
        (r.out(), r.err()),
        (
            "crontab.stable.example.com/typo created",
            "Warning: unknown field \"spec.replcas\""
        ),
        "{r}"
    );
    let r = c
        .k(&["get", "ct", "typo", "-o", "jsonpath={.spec}"])
        .run()
        .ok();
    assert_eq!(r.out(), r#"{"cronSpec":"* * * * */5"}"#, "pruned:{r}");
    // A merge patch with an unknown field: warned about under Warn (kubectl patch's default).
    let r = c
        .k(&[
            "patch",
            "ct",
            "typo",
            "--type=merge",
            "-p",
            r#"{"spec":{"imagee":"x"}}"#,
        ])
        .run()
        .ok();
    assert_eq!(r.err(), "Warning: unknown field \"spec.imagee\"", "{r}");
}
