//! Label and field selectors through registry-svc, every kind's selectable fields (upstream's
//! selector tests): grammar, namespaces, pages filled by reading on, and errors.

use kubestore_proto::{
    core::v1::{
        CreateEventRequest, Event, ListEventsRequest, ListPodsRequest, ObjectReference, PodStatus,
        UpdatePodRequest,
    },
    meta::v1::{ListOptions, ObjectMeta},
};
use kubestore_tests::{
    Cluster,
    fixtures_registry::{self as reg},
    fixtures_watch::*,
    services::{sample, scrape},
};
use tonic::Code;

fn labels(s: &str) -> ListOptions {
    ListOptions {
        label_selector: s.into(),
        ..Default::default()
    }
}

fn fields(s: &str) -> ListOptions {
    ListOptions {
        field_selector: s.into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn selectors_choose_what_lists_return() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    for (ns, name, l) in [
        ("a", "web", &[("app", "web"), ("tier", "1")][..]),
        ("a", "db", &[("app", "db"), ("tier", "2")][..]),
        ("a", "plain", &[][..]),
        ("b", "web", &[("app", "web")][..]),
    ] {
        reg::create_cm_in(&mut cms, ns, cm_in(ns, name, l))
            .await
            .expect("create");
    }
    let got = |r: (kubestore_proto::meta::v1::ListMeta, Vec<_>)| names(&r.1);
    // Empty namespace: every namespace.
    assert_eq!(
        got(list_cms(&mut cms, "", ListOptions::default())
            .await
            .expect("list")),
        ["db", "plain", "web", "web"]
    );
    for (sel, want) in [
        ("app=web", &["web"][..]),
        ("app==web", &["web"]),
        ("app!=web", &["db", "plain"]),
        ("app in (db, web)", &["db", "web"]),
        ("app notin (web)", &["db", "plain"]),
        ("app", &["db", "web"]),
        ("!app", &["plain"]),
        ("app,tier=2", &["db"]),
        ("tier>1", &["db"]),
        ("tier<2", &["web"]),
        ("", &["db", "plain", "web"]),
    ] {
        assert_eq!(
            got(list_cms(&mut cms, "a", labels(sel)).await.expect(sel)),
            want,
            "{sel}"
        );
    }
    for (sel, want) in [
        ("metadata.name=web", &["web"][..]),
        ("metadata.name!=web", &["db", "plain"]),
        ("metadata.name==db,metadata.namespace=a", &["db"]),
        ("metadata.namespace=b", &[]),
    ] {
        assert_eq!(
            got(list_cms(&mut cms, "a", fields(sel)).await.expect(sel)),
            want,
            "{sel}"
        );
    }
    // metadata.namespace narrows an all-namespaces list.
    assert_eq!(
        got(list_cms(&mut cms, "", fields("metadata.namespace=b"))
            .await
            .expect("list")),
        ["web"]
    );
    // metadata.name reads one key, not the namespace.
    let evaluated = || async {
        sample(
            &scrape(cluster.storage.metrics_addr).await,
            "storage_list_objects_evaluated_total",
        )
        .unwrap_or(0.0)
    };
    let before = evaluated().await;
    let r = list_cms(&mut cms, "a", fields("metadata.name=db"))
        .await
        .expect("list");
    assert_eq!(names(&r.1), ["db"]);
    assert_eq!(evaluated().await - before, 1.0);
    // Errors name what is wrong.
    let e = list_cms(&mut cms, "a", fields("data.k=v"))
        .await
        .expect_err("unsupported");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(e.message(), "field label not supported: data.k");
    for bad in ["x=a,b", "x"] {
        let e = list_cms(&mut cms, "a", fields(bad)).await.expect_err(bad);
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("fieldSelector"), "{}", e.message());
    }
    for bad in ["x==a==b", "!x=a", "x<a", "x in (a"] {
        let e = list_cms(&mut cms, "a", labels(bad)).await.expect_err(bad);
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("labelSelector"), "{}", e.message());
    }

    // Pods: spec.nodeName, spec.restartPolicy, status.phase.
    let mut pods = cluster.pods().await;
    for (name, node) in [("p1", "n1"), ("p2", "n2"), ("p3", "")] {
        reg::create_pod(&mut pods, reg::pod(name, node))
            .await
            .expect("create");
    }
    let mut running = reg::get_pod(&mut pods, "p2").await.expect("get");
    running.status = Some(PodStatus {
        phase: "Running".into(),
        ..Default::default()
    });
    pods.update_status(UpdatePodRequest {
        namespace: reg::NS.into(),
        pod: Some(running),
        dry_run: false,
    })
    .await
    .expect("status");
    let pod_names = |sel: &str| {
        let mut pods = pods.clone();
        let sel = sel.to_string();
        async move {
            pods.list(ListPodsRequest {
                namespace: String::new(),
                options: Some(fields(&sel)),
            })
            .await
            .expect("list")
            .into_inner()
            .items
            .into_iter()
            .map(|p| p.metadata.unwrap_or_default().name)
            .collect::<Vec<_>>()
        }
    };
    assert_eq!(pod_names("spec.nodeName=n1").await, ["p1"]);
    assert_eq!(pod_names("spec.nodeName=").await, ["p3"]);
    assert_eq!(pod_names("status.phase=Running").await, ["p2"]);
    assert_eq!(
        pod_names("status.phase!=Running,spec.restartPolicy=Always").await,
        ["p1", "p3"]
    );

    // Events: involvedObject.*, reason, type.
    let mut events = cluster.events().await;
    for (name, kind, obj, why, ty, obj_ns, uid) in [
        ("e1", "Pod", "p1", "Started", "Normal", reg::NS, "u1"),
        ("e2", "Pod", "p2", "BackOff", "Warning", reg::NS, "u2"),
        ("e3", "Node", "n1", "Started", "Normal", "", "u3"),
    ] {
        events
            .create(CreateEventRequest {
                namespace: reg::NS.into(),
                event: Some(Event {
                    metadata: Some(ObjectMeta {
                        name: name.into(),
                        ..Default::default()
                    }),
                    involved_object: Some(ObjectReference {
                        kind: kind.into(),
                        name: obj.into(),
                        namespace: obj_ns.into(),
                        uid: uid.into(),
                        ..Default::default()
                    }),
                    reason: why.into(),
                    r#type: ty.into(),
                    ..Default::default()
                }),
                dry_run: false,
            })
            .await
            .expect("create");
    }
    for (sel, want) in [
        ("involvedObject.kind=Pod", &["e1", "e2"][..]),
        ("involvedObject.name=n1", &["e3"]),
        ("reason=Started,type=Normal", &["e1", "e3"]),
        ("type=Warning", &["e2"]),
        ("involvedObject.namespace=default", &["e1", "e2"]),
        ("involvedObject.namespace!=default", &["e3"]),
        ("involvedObject.uid=u2", &["e2"]),
    ] {
        let got: Vec<String> = events
            .list(ListEventsRequest {
                namespace: reg::NS.into(),
                options: Some(fields(sel)),
            })
            .await
            .expect(sel)
            .into_inner()
            .items
            .into_iter()
            .map(|e| e.metadata.unwrap_or_default().name)
            .collect();
        assert_eq!(got, want, "{sel}");
    }
}
