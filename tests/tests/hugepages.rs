//! Defects issue, point 13: hugepages quantities in a pod's container resources must be whole
//! pages, as upstream's `ValidateResourceRequirements` (`validateResourceQuantityHugePageValue`)
//! has it: `hugepages-1Mi: 1.1Mi` is Invalid, at the quantity's own field path, in requests as
//! in limits; whole pages are accepted. Point 11: the rule ratchets, as upstream's
//! `AllowIndivisibleHugePagesValues`: a pod stored with indivisible quantities (before the rule)
//! can still be updated with them.

use kubestore_proto::{meta::v1::ObjectMeta, storage::v1::CreateRequest};
use kubestore_tests::{
    Cluster,
    fixtures_registry::{container, create_pod, get_pod, meta, pod, reason, update_pod},
};
use prost::Message;
use tonic::Code;
use tonic_types::StatusExt;

#[tokio::test(flavor = "multi_thread")]
async fn hugepages_must_be_whole_pages() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;

    let mut odd = pod("odd", "node-1");
    odd.spec.get_or_insert_with(Default::default).containers = vec![container(
        "nginx:1",
        &[("cpu", "100m")],
        &[("cpu", "100m"), ("hugepages-1Mi", "1.1Mi")],
    )];
    let e = create_pod(&mut pods, odd)
        .await
        .expect_err("1.1Mi is not a whole number of 1Mi pages");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    // The limit, and the request defaulted from it (SetDefaults_Pod), each at its own path.
    let violations: Vec<(String, String)> = e
        .get_details_bad_request()
        .map(|b| {
            b.field_violations
                .into_iter()
                .map(|v| (v.field, v.description))
                .collect()
        })
        .unwrap_or_default();
    let fields: Vec<&str> = violations.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.containers[0].resources.limits[hugepages-1Mi]",
            "spec.containers[0].resources.requests[hugepages-1Mi]",
        ]
    );
    for (_, description) in &violations {
        assert_eq!(
            description,
            // Upstream prints the quantity as Go writes it back: 1.1Mi is not a whole number
            // of bytes, so its canonical form is decimal, in milli-units.
            "Invalid value: \"1153433600m\": 1153433600m is not positive integer multiple of hugepages-1Mi"
        );
    }

    let mut whole = pod("whole", "node-1");
    whole.spec.get_or_insert_with(Default::default).containers = vec![container(
        "nginx:1",
        &[("memory", "64Mi"), ("hugepages-2Mi", "4Mi")],
        &[("memory", "64Mi"), ("hugepages-2Mi", "4194304")],
    )];
    create_pod(&mut pods, whole)
        .await
        .expect("two 2Mi pages, however written");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_stored_with_indivisible_hugepages_can_still_be_updated() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    // Written straight to storage, as by a registry before the rule: 2.1Mi of 2Mi pages.
    let mut old = pod("old", "node-1");
    old.metadata = Some(ObjectMeta {
        name: "old".into(),
        namespace: "default".into(),
        uid: "uid-old".into(),
        generation: 1,
        ..Default::default()
    });
    let r = [("cpu", "10"), ("hugepages-2Mi", "2.1Mi")];
    old.spec.get_or_insert_with(Default::default).containers = vec![container("nginx:1", &r, &r)];
    let mut storage = cluster.storage_client().await;
    storage
        .create(CreateRequest {
            key: "/pods/default/old".into(),
            object: old.encode_to_vec(),
            ttl_seconds: 0,
            dry_run: false,
        })
        .await
        .expect("stored as it was written before the rule");

    // Upstream's TestPodStrategyValidateUpdate: the same values again, with a new label.
    let mut labelled = get_pod(&mut pods, "old").await.expect("get");
    labelled
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .insert("app".into(), "web".into());
    let labelled = update_pod(&mut pods, labelled)
        .await
        .expect("an update repeating the stored hugepages");
    assert_eq!(meta(&labelled).labels["app"], "web");
    // And the one spec change a pod allows, next to them.
    let mut new_image = labelled;
    new_image
        .spec
        .get_or_insert_with(Default::default)
        .containers[0]
        .image = "nginx:2".into();
    let updated = update_pod(&mut pods, new_image)
        .await
        .expect("an image change next to the stored hugepages");
    let spec = updated.spec.expect("spec");
    assert_eq!(spec.containers[0].image, "nginx:2");
    assert_eq!(
        spec.containers[0]
            .resources
            .as_ref()
            .expect("resources")
            .limits["hugepages-2Mi"],
        // 2.1Mi as upstream writes it back (not a whole number of bytes: decimal milli-units).
        "2202009600m"
    );

    // A pod stored with whole pages gets no such allowance: its values cannot become
    // indivisible (nor change at all: a pod's resources are immutable).
    let mut whole = pod("whole", "node-1");
    let r = [("cpu", "10"), ("hugepages-2Mi", "4Mi")];
    whole.spec.get_or_insert_with(Default::default).containers = vec![container("nginx:1", &r, &r)];
    let mut odd = create_pod(&mut pods, whole).await.expect("whole pages");
    let r = [("cpu", "10"), ("hugepages-2Mi", "2.1Mi")];
    odd.spec.get_or_insert_with(Default::default).containers = vec![container("nginx:1", &r, &r)];
    let e = update_pod(&mut pods, odd).await.expect_err("indivisible");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    let fields: Vec<String> = e
        .get_details_bad_request()
        .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
        .unwrap_or_default();
    assert!(
        fields.contains(&"spec.containers[0].resources.limits[hugepages-2Mi]".to_string()),
        "{fields:?}"
    );
}
