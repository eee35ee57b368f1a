//! Defects issue, point 13: hugepages quantities in a pod's container resources must be whole
//! pages, as upstream's `ValidateResourceRequirements` (`validateResourceQuantityHugePageValue`)
//! has it: `hugepages-1Mi: 1.1Mi` is Invalid, at the quantity's own field path, in requests as
//! in limits; whole pages are accepted.

use kubestore_tests::{
    Cluster,
    fixtures_registry::{container, create_pod, pod, reason},
};
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
            "Invalid value: \"1.1Mi\": 1.1Mi is not positive integer multiple of hugepages-1Mi"
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
