//! Pods carry upstream's container, scheduling and status fields (init containers, ports, env,
//! commands, volume mounts, DNS and scheduling settings; conditions, addresses, container
//! statuses), with upstream's v1 defaults and validation, through the typed gRPC API and
//! through Kubernetes' REST API (JSON names, fields written even when empty for clients with
//! strict models, strategic merge patches of status, and printPod's Table).

use std::{net::SocketAddr, time::Duration};

use kubestore_proto::{
    Timestamp,
    core::v1::{
        Container, ContainerPort, ContainerState, ContainerStateRunning, ContainerStatus, EnvVar,
        HostIp, Pod, PodCondition, PodIp, PodReadinessGate, PodStatus, UpdatePodRequest, Volume,
        VolumeMount, pods_client::PodsClient,
    },
};
use kubestore_tests::{
    EtcdProcess,
    fixtures_registry::*,
    reason,
    services::{ServiceHandle, channel, spawn_storage, wait_serving},
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::Code;
use tonic_types::StatusExt;

/// etcd, storage-svc, and registry-svc serving the REST API on its own listener.
struct Stack {
    rest: SocketAddr,
    registry: ServiceHandle,
    _storage: ServiceHandle,
    _etcd: EtcdProcess,
}

impl Stack {
    async fn start() -> Self {
        let etcd = EtcdProcess::start().await;
        let storage = spawn_storage(storage_svc::Config::default(), etcd.endpoint(), None);
        wait_serving(&storage.url()).await;
        let rest = std::net::TcpListener::bind("127.0.0.1:0").expect("bind REST port");
        rest.set_nonblocking(true).expect("nonblocking");
        let rest_addr = rest.local_addr().expect("local addr");
        let config = registry_svc::Config {
            storage_addr: storage.url(),
            ..Default::default()
        };
        let registry = ServiceHandle::spawn("registry-svc", None, move |l, m, stop| async move {
            let rest = tokio::net::TcpListener::from_std(rest).map_err(|e| e.to_string())?;
            registry_svc::run_with_listeners(l, Some(m), Some(rest), config, async {
                let _ = stop.await;
            })
            .await
            .map_err(|e| e.to_string())
        });
        wait_serving(&registry.url()).await;
        Self {
            rest: rest_addr,
            registry,
            _storage: storage,
            _etcd: etcd,
        }
    }

    async fn pods(&self) -> PodsClient<tonic::transport::Channel> {
        PodsClient::new(channel(&self.registry.url()).await)
    }

    /// One HTTP/1.1 request (`Connection: close`): the status code and the JSON body.
    async fn http(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (u16, Value) {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.rest,
            body.len()
        );
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            request.push_str("Content-Type: application/json\r\n");
        }
        for (k, v) in headers {
            request.push_str(&format!("{k}: {v}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        let exchange = async {
            let mut s = tokio::net::TcpStream::connect(self.rest).await?;
            s.write_all(request.as_bytes()).await?;
            let mut out = Vec::new();
            s.read_to_end(&mut out).await?;
            Ok::<_, std::io::Error>(out)
        };
        let raw = tokio::time::timeout(Duration::from_secs(10), exchange)
            .await
            .expect("an answer in time")
            .expect("HTTP exchange");
        let text = String::from_utf8(raw).expect("UTF-8");
        let (head, rest) = text.split_once("\r\n\r\n").expect("headers end");
        let status: u16 = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("status code");
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        let payload = if chunked {
            unchunk(rest)
        } else {
            rest.to_string()
        };
        let json =
            serde_json::from_str(&payload).unwrap_or_else(|e| panic!("JSON body ({e}): {payload}"));
        (status, json)
    }
}

/// A chunked body's content.
fn unchunk(mut s: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = s.split_once("\r\n").expect("chunk size");
        let n = usize::from_str_radix(size.trim(), 16).expect("hex size");
        if n == 0 {
            return out;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
}

fn at(seconds: i64) -> Option<Timestamp> {
    Some(Timestamp { seconds, nanos: 0 })
}

/// A pod using the new spec fields, as a manifest would.
fn rich_pod(name: &str) -> Pod {
    let mut p = pod(name, "node-1");
    let spec = p.spec.as_mut().expect("spec");
    spec.containers[0] = Container {
        name: "app".into(),
        image: "nginx:1.27".into(),
        command: vec!["nginx".into()],
        args: vec!["-g".into(), "daemon off;".into()],
        working_dir: "/srv".into(),
        ports: vec![ContainerPort {
            name: "http".into(),
            container_port: 80,
            ..Default::default()
        }],
        env: vec![EnvVar {
            name: "MODE".into(),
            value: "prod".into(),
            value_from: None,
        }],
        volume_mounts: vec![VolumeMount {
            name: "data".into(),
            mount_path: "/data".into(),
            read_only: true,
            sub_path: "web".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    spec.init_containers = vec![Container {
        name: "setup".into(),
        image: "busybox".into(),
        command: vec!["true".into()],
        ..Default::default()
    }];
    spec.volumes = vec![Volume {
        name: "data".into(),
        empty_dir: Some(Default::default()),
        ..Default::default()
    }];
    spec.node_selector = [("disk".to_string(), "ssd".to_string())].into();
    spec.service_account_name = "web".into();
    spec.hostname = "web-0".into();
    spec.subdomain = "web".into();
    spec.priority_class_name = "high".into();
    spec.active_deadline_seconds = Some(600);
    spec.readiness_gates = vec![PodReadinessGate {
        condition_type: "example.com/lb".into(),
    }];
    p
}

/// What a kubelet reports of `rich_pod` running.
fn kubelet_status(qos: &str) -> PodStatus {
    PodStatus {
        phase: "Running".into(),
        qos_class: qos.into(),
        start_time: at(1_700_000_000),
        conditions: [
            ("Initialized", "True"),
            ("Ready", "True"),
            ("ContainersReady", "True"),
            ("PodScheduled", "True"),
            ("example.com/lb", "True"),
        ]
        .map(|(t, s)| PodCondition {
            r#type: t.into(),
            status: s.into(),
            last_transition_time: at(1_700_000_000),
            ..Default::default()
        })
        .to_vec(),
        host_ip: "10.0.0.7".into(),
        host_ips: vec![HostIp {
            ip: "10.0.0.7".into(),
        }],
        pod_ip: "10.244.3.9".into(),
        pod_ips: vec![PodIp {
            ip: "10.244.3.9".into(),
        }],
        container_statuses: vec![ContainerStatus {
            name: "app".into(),
            state: Some(ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: at(1_700_000_001),
                }),
                ..Default::default()
            }),
            ready: true,
            restart_count: 0,
            image: "nginx:1.27".into(),
            image_id: "docker-pullable://nginx@sha256:abc".into(),
            container_id: "containerd://0123".into(),
            started: Some(true),
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn update_status(
    pods: &mut PodsClient<tonic::transport::Channel>,
    p: Pod,
) -> Result<Pod, tonic::Status> {
    pods.update_status(UpdatePodRequest {
        namespace: NS.into(),
        pod: Some(p),
        dry_run: false,
    })
    .await
    .map(|r| r.into_inner())
}

fn fields(e: &tonic::Status) -> Vec<String> {
    e.get_details_bad_request()
        .map(|b| b.field_violations.into_iter().map(|v| v.field).collect())
        .unwrap_or_default()
}

/// gRPC: the new fields are stored as sent, with upstream's v1 defaults filled; UpdateStatus
/// writes the new status fields and keeps the QoS class; Update never writes status.
#[tokio::test(flavor = "multi_thread")]
async fn the_typed_api_stores_the_new_fields_with_upstreams_defaults() {
    let stack = Stack::start().await;
    let mut pods = stack.pods().await;
    let created = create_pod(&mut pods, rich_pod("web"))
        .await
        .expect("create");
    let spec = created.spec.clone().expect("spec");
    // SetDefaults_PodSpec / SetDefaults_Pod.
    assert_eq!(spec.dns_policy, "ClusterFirst");
    assert_eq!(spec.scheduler_name, "default-scheduler");
    assert_eq!(spec.enable_service_links, Some(true));
    assert_eq!(spec.restart_policy, "Always");
    // SetDefaults_Container, for app and init containers, and the ports' protocol.
    let app = &spec.containers[0];
    assert_eq!(app.image_pull_policy, "IfNotPresent", "nginx:1.27");
    assert_eq!(app.termination_message_path, "/dev/termination-log");
    assert_eq!(app.termination_message_policy, "File");
    assert_eq!(app.ports[0].protocol, "TCP");
    assert_eq!(
        spec.init_containers[0].image_pull_policy, "Always",
        "busybox"
    );
    // What was sent is kept.
    let mut want = rich_pod("web").spec.expect("spec");
    want.containers[0].image_pull_policy = "IfNotPresent".into();
    want.containers[0].ports[0].protocol = "TCP".into();
    for c in want.containers.iter_mut().chain(&mut want.init_containers) {
        c.termination_message_path = "/dev/termination-log".into();
        c.termination_message_policy = "File".into();
        if c.image_pull_policy.is_empty() {
            c.image_pull_policy = "Always".into();
        }
    }
    want.dns_policy = "ClusterFirst".into();
    want.scheduler_name = "default-scheduler".into();
    want.enable_service_links = Some(true);
    want.restart_policy = "Always".into();
    want.termination_grace_period_seconds = Some(30);
    want.security_context = Some(Default::default());
    // The deprecated field mirrors the account (the v1 conversion).
    want.service_account = "web".into();
    assert_eq!(spec, want);
    assert_eq!(get_pod(&mut pods, "web").await.expect("get"), created);
    let qos = created.status.clone().expect("status").qos_class;
    assert_eq!(qos, "BestEffort");

    // UpdateStatus takes every new status field; the QoS class stays what it was.
    let mut running = created.clone();
    running.status = Some(PodStatus {
        qos_class: String::new(),
        ..kubelet_status("")
    });
    let written = update_status(&mut pods, running).await.expect("status");
    assert_eq!(written.status, Some(kubelet_status(&qos)));
    assert_eq!(written.spec, created.spec, "status writes leave the spec");
    let read = get_pod(&mut pods, "web").await.expect("get");
    assert_eq!(read.status, Some(kubelet_status(&qos)));
    // A podIP alone (an older kubelet) is podIPs[0] too (upstream's v1 conversion).
    let mut old_kubelet = read.clone();
    if let Some(s) = old_kubelet.status.as_mut() {
        s.pod_ip = "10.244.3.10".into();
        s.pod_ips.clear();
    }
    let written = update_status(&mut pods, old_kubelet).await.expect("status");
    assert_eq!(
        written.status.expect("status").pod_ips,
        [PodIp {
            ip: "10.244.3.10".into()
        }]
    );
    // Upstream's selectable pod fields among the new ones.
    for (selector, want) in [
        ("status.podIP=10.244.3.10", 1),
        ("status.podIP=10.244.3.9", 0),
        (
            "spec.schedulerName=default-scheduler,spec.serviceAccountName=web",
            1,
        ),
        ("status.nominatedNodeName=node-2", 0),
    ] {
        let listed = pods
            .list(kubestore_proto::core::v1::ListPodsRequest {
                namespace: NS.into(),
                options: Some(kubestore_proto::meta::v1::ListOptions {
                    field_selector: selector.into(),
                    ..Default::default()
                }),
            })
            .await
            .expect("list")
            .into_inner();
        assert_eq!(listed.items.len(), want, "{selector}");
    }
    // The QoS class is not the status writer's to change.
    let mut forged = get_pod(&mut pods, "web").await.expect("get");
    if let Some(s) = forged.status.as_mut() {
        s.qos_class = "Guaranteed".into();
    }
    let e = update_status(&mut pods, forged)
        .await
        .expect_err("immutable");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(fields(&e), ["status.qosClass"]);
    // Update writes no status, whatever it sends, and may change an image.
    let mut update = get_pod(&mut pods, "web").await.expect("get");
    update.status = Some(PodStatus::default());
    update.spec.as_mut().expect("spec").init_containers[0].image = "busybox:1.36".into();
    let updated = update_pod(&mut pods, update).await.expect("update");
    assert_eq!(
        updated.status.clone().expect("status").pod_ip,
        "10.244.3.10"
    );
    assert_eq!(
        updated.spec.clone().expect("spec").init_containers[0].image,
        "busybox:1.36"
    );
    // But no other field of the spec.
    let mut moved = updated.clone();
    moved.spec.as_mut().expect("spec").containers[0].ports[0].container_port = 8080;
    let e = update_pod(&mut pods, moved).await.expect_err("immutable");
    assert_eq!(fields(&e), ["spec"]);
}

/// gRPC: upstream's rules of the new fields, every problem at once, and nothing stored.
#[tokio::test(flavor = "multi_thread")]
async fn invalid_new_fields_are_refused_with_upstreams_paths() {
    let stack = Stack::start().await;
    let mut pods = stack.pods().await;
    let mut bad = rich_pod("bad");
    let spec = bad.spec.as_mut().expect("spec");
    spec.init_containers[0].name = "app".into();
    spec.containers[0].ports = vec![
        ContainerPort {
            container_port: 70000,
            protocol: "tcp".into(),
            ..Default::default()
        },
        ContainerPort {
            name: "http".into(),
            container_port: 80,
            ..Default::default()
        },
        ContainerPort {
            name: "http".into(),
            container_port: 81,
            ..Default::default()
        },
    ];
    spec.containers[0].env[0].name = "A=B".into();
    spec.containers[0].image_pull_policy = "Sometimes".into();
    spec.dns_policy = "Bogus".into();
    spec.active_deadline_seconds = Some(0);
    let e = create_pod(&mut pods, bad).await.expect_err("invalid");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert_eq!(
        fields(&e),
        [
            "spec.containers[0].ports[0].containerPort",
            "spec.containers[0].ports[0].protocol",
            "spec.containers[0].ports[2].name",
            "spec.containers[0].env[0].name",
            "spec.containers[0].imagePullPolicy",
            "spec.initContainers[0].name",
            "spec.dnsPolicy",
            "spec.activeDeadlineSeconds",
        ],
        "{}",
        e.message()
    );
    assert!(
        e.message()
            .contains("spec.initContainers[0].name: Duplicate value: \"app\""),
        "{}",
        e.message()
    );
    assert!(
        get_pod(&mut pods, "bad")
            .await
            .is_err_and(|e| e.code() == Code::NotFound),
        "nothing stored"
    );
    // A status writer cannot bring a terminated container back in a pod that never restarts.
    let mut never = rich_pod("never");
    never.spec.as_mut().expect("spec").restart_policy = "Never".into();
    let created = create_pod(&mut pods, never).await.expect("create");
    let mut done = created.clone();
    let mut status = kubelet_status("BestEffort");
    status.container_statuses[0].state = Some(ContainerState {
        terminated: Some(Default::default()),
        ..Default::default()
    });
    done.status = Some(status.clone());
    let done = update_status(&mut pods, done).await.expect("terminated");
    let mut again = done.clone();
    again.status = Some(kubelet_status("BestEffort"));
    let e = update_status(&mut pods, again)
        .await
        .expect_err("no restart");
    assert_eq!(fields(&e), ["status.containerStatuses[0].state"]);
}

/// The REST API: JSON names (`imageID`, `podIPs`, `hostIP`), what upstream writes even when
/// empty (`ready`, `restartCount`, `imageID`, `lastState: {}`, `lastProbeTime: null`), status
/// patches merged by condition type, and printPod's Table.
#[tokio::test(flavor = "multi_thread")]
async fn the_rest_api_serves_the_new_fields_as_kubernetes_writes_them() {
    let stack = Stack::start().await;
    let manifest = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            "nodeName": "node-1",
            "initContainers": [{"name": "setup", "image": "busybox", "command": ["true"]}],
            "containers": [{
                "name": "app", "image": "nginx",
                "command": ["nginx"], "args": ["-g", "daemon off;"],
                "ports": [{"name": "http", "containerPort": 80, "hostIP": "0.0.0.0", "hostPort": 8080}],
                "env": [{"name": "MODE", "value": "prod"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}],
                "stdin": true, "tty": true
            }],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "readinessGates": [{"conditionType": "example.com/lb"}],
            "priority": 100
        }
    });
    let base = "/api/v1/namespaces/default/pods";
    let (code, created) = stack.http("POST", base, &[], Some(manifest)).await;
    assert_eq!(code, 201, "{created}");
    let spec = &created["spec"];
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["priority"], 100);
    assert_eq!(spec["initContainers"][0]["imagePullPolicy"], "Always");
    let app = &spec["containers"][0];
    assert_eq!(app["imagePullPolicy"], "Always", "no tag: latest");
    assert_eq!(app["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(app["terminationMessagePolicy"], "File");
    assert_eq!(
        app["ports"],
        json!([{"name": "http", "containerPort": 80, "protocol": "TCP", "hostPort": 8080, "hostIP": "0.0.0.0"}])
    );
    assert_eq!(
        app["volumeMounts"],
        json!([{"name": "data", "mountPath": "/data", "readOnly": true}])
    );
    assert_eq!((&app["stdin"], &app["tty"]), (&json!(true), &json!(true)));
    assert_eq!(
        spec["readinessGates"],
        json!([{"conditionType": "example.com/lb"}])
    );

    // A kubelet's status, with one container status holding nothing but its name: upstream
    // still writes ready, restartCount, image, imageID, state and lastState.
    let mut with_status = created.clone();
    with_status["status"] = json!({
        "phase": "Running",
        "qosClass": "BestEffort",
        "hostIP": "10.0.0.7", "hostIPs": [{"ip": "10.0.0.7"}],
        "podIP": "10.244.3.9",
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-02T03:04:05Z"},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-01-02T03:04:05Z"}
        ],
        "initContainerStatuses": [{"name": "setup"}],
        "containerStatuses": [{
            "name": "app", "ready": true, "restartCount": 2, "image": "nginx",
            "imageID": "docker-pullable://nginx@sha256:abc", "containerID": "containerd://0123",
            "started": true,
            "state": {"running": {"startedAt": "2024-01-02T03:04:06Z"}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                "startedAt": "2024-01-02T03:04:05Z", "finishedAt": "2024-01-02T03:04:06Z"}}
        }]
    });
    let (code, written) = stack
        .http("PUT", &format!("{base}/web/status"), &[], Some(with_status))
        .await;
    assert_eq!(code, 200, "{written}");
    let status = &written["status"];
    assert_eq!(
        status["podIPs"],
        json!([{"ip": "10.244.3.9"}]),
        "from podIP"
    );
    assert_eq!(status["hostIPs"], json!([{"ip": "10.0.0.7"}]));
    assert_eq!(
        status["containerStatuses"][0]["imageID"],
        "docker-pullable://nginx@sha256:abc"
    );
    assert_eq!(
        status["containerStatuses"][0]["containerID"],
        "containerd://0123"
    );
    assert_eq!(
        status["initContainerStatuses"][0],
        json!({"name": "setup", "state": {}, "lastState": {}, "ready": false,
               "restartCount": 0, "image": "", "imageID": ""})
    );
    assert_eq!(
        status["conditions"][0],
        json!({"type": "Ready", "status": "True", "lastProbeTime": null,
               "lastTransitionTime": "2024-01-02T03:04:05Z"})
    );
    assert_eq!(
        status["containerStatuses"][0]["lastState"]["terminated"]["exitCode"],
        1
    );

    // A strategic merge patch of status merges conditions by type (kubelets patch so).
    let (code, patched) = stack
        .http(
            "PATCH",
            &format!("{base}/web/status"),
            &[("Content-Type", "application/strategic-merge-patch+json")],
            Some(json!({"status": {
                "conditions": [
                    {"type": "example.com/lb", "status": "True", "lastTransitionTime": "2024-01-02T03:04:07Z"}
                ],
                // A list without a merge key is replaced whole.
                "initContainerStatuses": [{"name": "setup", "ready": true,
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]
            }})),
        )
        .await;
    assert_eq!(code, 200, "{patched}");
    let types: Vec<&str> = patched["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(types, ["Ready", "PodScheduled", "example.com/lb"]);
    assert_eq!(
        patched["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"],
        "Completed"
    );

    // kubectl's Table: READY, STATUS, RESTARTS with the last restart's age, IP, READINESS GATES.
    let table = [(
        "Accept",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    )];
    let (code, t) = stack
        .http("GET", &format!("{base}/web"), &table, None)
        .await;
    assert_eq!(code, 200, "{t}");
    let cells = t["rows"][0]["cells"].as_array().expect("cells").clone();
    assert_eq!(cells[..3], [json!("web"), json!("1/1"), json!("Running")]);
    let restarts = cells[3].as_str().expect("a string");
    assert!(
        restarts.starts_with("2 (") && restarts.ends_with(" ago)"),
        "{restarts}"
    );
    assert_eq!(
        cells[5..],
        [
            json!("10.244.3.9"),
            json!("node-1"),
            json!("<none>"),
            json!("1/1")
        ]
    );
    // A container waiting to pull its image shows why.
    let mut backoff = patched.clone();
    backoff["status"]["containerStatuses"][0]["state"] =
        json!({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}});
    backoff["status"]["containerStatuses"][0]["ready"] = json!(false);
    let (code, _) = stack
        .http("PUT", &format!("{base}/web/status"), &[], Some(backoff))
        .await;
    assert_eq!(code, 200);
    let (_, t) = stack.http("GET", base, &table, None).await;
    assert_eq!(
        t["rows"][0]["cells"].as_array().expect("cells")[1..3],
        [json!("0/1"), json!("ImagePullBackOff")]
    );
    // Deleted: Terminating.
    let (code, _) = stack
        .http("DELETE", &format!("{base}/web"), &[], None)
        .await;
    assert_eq!(code, 200);
    let (_, t) = stack
        .http("GET", &format!("{base}/web"), &table, None)
        .await;
    assert_eq!(t["rows"][0]["cells"][2], "Terminating");
    assert_eq!(t["rows"][0].get("conditions"), None);
    // Finished (a kubelet's terminal phase before its final delete): the row says so in its
    // conditions (upstream's podSuccessConditions), and a finished pod is not Terminating.
    let (_, current) = stack.http("GET", &format!("{base}/web"), &[], None).await;
    let mut done = current.clone();
    done["status"]["phase"] = json!("Succeeded");
    done["status"]["containerStatuses"][0]["state"] =
        json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
    let (code, written) = stack
        .http("PUT", &format!("{base}/web/status"), &[], Some(done))
        .await;
    assert_eq!(code, 200, "{written}");
    let (_, t) = stack
        .http("GET", &format!("{base}/web"), &table, None)
        .await;
    assert_eq!(t["rows"][0]["cells"][2], "Completed");
    assert_eq!(
        t["rows"][0]["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Succeeded",
                "message": "The pod has completed successfully."}])
    );

    // Upstream's refusal: 422 with a cause per field.
    let (code, refused) = stack
        .http(
            "POST",
            base,
            &[],
            Some(
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
                "spec": {"containers": [{"name": "app", "image": "nginx",
                    "ports": [{"containerPort": 0, "protocol": "ICMP"}]}]}}),
            ),
        )
        .await;
    assert_eq!(code, 422, "{refused}");
    let causes: Vec<(&str, &str)> = refused["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default(),
                c["message"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        causes,
        [
            (
                "spec.containers[0].ports[0].containerPort",
                "Required value"
            ),
            (
                "spec.containers[0].ports[0].protocol",
                "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
            ),
        ]
    );
}
