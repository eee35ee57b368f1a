//! A whole collection over the REST API, read from storage in chunks as it streams to its
//! client (issue 30: a client that does not read holds one chunk, not the list), is the list
//! it always was: every selected item once, in order, as objects, metadata or a Table, at one
//! revision, a revision the client names included.

use kubestore_tests::{
    kube::KubeCluster,
    rest::{CMS, JSON, call},
};
use serde_json::{Value, json};

/// Names of the items of a list or the rows of a Table.
fn names(list: &Value) -> Vec<String> {
    let items = list["items"]
        .as_array()
        .or_else(|| list["rows"].as_array())
        .expect("items or rows");
    items
        .iter()
        .map(|i| {
            i["metadata"]["name"]
                .as_str()
                .or_else(|| i["cells"][0].as_str())
                .expect("a name")
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_whole_collection_read_in_chunks_is_one_list() {
    let c = KubeCluster::start().await;
    // 120 objects of ~20 KB: the first chunk holds 16, the later ones ~50 each.
    let blob = "b".repeat(20 * 1024);
    for i in 0..120 {
        let team = if i % 3 == 0 { "a" } else { "b" };
        let body = json!({"metadata": {"name": format!("cm-{i:03}"), "labels": {"team": team}},
                          "data": {"blob": blob}});
        call(
            c.api,
            "POST",
            CMS,
            &[JSON],
            &serde_json::to_vec(&body).expect("JSON"),
        )
        .await
        .is(201);
    }
    let all: Vec<String> = (0..120).map(|i| format!("cm-{i:03}")).collect();
    let team_a: Vec<String> = (0..120)
        .filter(|i| i % 3 == 0)
        .map(|i| format!("cm-{i:03}"))
        .collect();
    let list = call(c.api, "GET", CMS, &[], b"").await.is(200).json();
    assert_eq!(names(&list), all);
    assert!(
        list["metadata"]["continue"].is_null(),
        "{}",
        list["metadata"]
    );
    assert!(list["metadata"]["resourceVersion"].as_str().is_some());
    let list = call(
        c.api,
        "GET",
        &format!("{CMS}?labelSelector=team%3Da"),
        &[],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(names(&list), team_a);
    let meta = call(
        c.api,
        "GET",
        CMS,
        &[(
            "Accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(meta["kind"], "PartialObjectMetadataList");
    assert_eq!(names(&meta), all);
    assert!(meta["items"][0]["data"].is_null());
    let table = call(
        c.api,
        "GET",
        &format!("{CMS}?labelSelector=team%3Da"),
        &[("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1")],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(table["kind"], "Table");
    assert_eq!(names(&table), team_a);
    // A list not older than a revision the client names: the first chunk not older than it,
    // the others at the first one's revision.
    let rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .expect("a revision");
    let list = call(
        c.api,
        "GET",
        &format!("{CMS}?resourceVersion={rv}&resourceVersionMatch=NotOlderThan"),
        &[],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(names(&list), all);
}
