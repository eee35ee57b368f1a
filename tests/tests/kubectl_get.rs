//! kubectl reads as from kube-apiserver (rest-api.md §11 cases 2, 3 and 4): server-side
//! tables with upstream's columns (`-o wide`, `-A`), selectors, paging with `--chunk-size`,
//! JSONPath on int64 fields, NotFound's text, `describe` with the Events about a pod (the typed
//! client: every field must decode as Go's types), and `get -w` printing a row per change.

use std::time::Duration;

use kubestore_tests::kube::{KubeCluster, Kubectl, cells, pod_yaml, row, table};

/// Three pods: two on node-1 (`app=web`, `app=db`), one on node-2.
fn three_pods(c: &KubeCluster) {
    let pods = [
        pod_yaml("web-a", "node-1", &[("app", "web")]),
        pod_yaml("web-b", "node-2", &[("app", "web")]),
        pod_yaml("db", "node-1", &[("app", "db")]),
    ]
    .join("---\n");
    let r = c.create("pods.yaml", &pods).ok();
    assert_eq!(
        r.out(),
        "pod/web-a created\npod/web-b created\npod/db created",
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn get_prints_upstream_tables() {
    let c = KubeCluster::start().await;
    three_pods(&c);
    for v in [Kubectl::V1_29, Kubectl::V1_33, Kubectl::V1_37] {
        let r = c.kubectl(v, &["get", "pods"]).run().ok();
        // AGE (last) changes with time.
        assert_eq!(
            table(r.out(), 1),
            [
                row(&["NAME", "READY", "STATUS", "RESTARTS"]),
                row(&["db", "0/1", "Pending", "0"]),
                row(&["web-a", "0/1", "Pending", "0"]),
                row(&["web-b", "0/1", "Pending", "0"]),
            ],
            "{}: {r}",
            v.minor()
        );
        assert!(
            r.out()
                .starts_with("NAME    READY   STATUS    RESTARTS   AGE\n"),
            "{r}"
        );
        // Server-side printing: one request, asking for a Table.
        assert!(
            r.requested(&["GET", "/api/v1/namespaces/default/pods?limit=500", "200"]),
            "{r}"
        );
    }
    let r = c.k(&["get", "pods", "-o", "wide"]).run().ok();
    let rows: Vec<Vec<String>> = r
        .out()
        .lines()
        .map(|l| {
            let mut c = cells(l);
            c.remove(4); // AGE
            c
        })
        .collect();
    assert_eq!(
        rows,
        [
            row(&[
                "NAME",
                "READY",
                "STATUS",
                "RESTARTS",
                "IP",
                "NODE",
                "NOMINATED NODE",
                "READINESS GATES"
            ]),
            row(&[
                "db", "0/1", "Pending", "0", "<none>", "node-1", "<none>", "<none>"
            ]),
            row(&[
                "web-a", "0/1", "Pending", "0", "<none>", "node-1", "<none>", "<none>"
            ]),
            row(&[
                "web-b", "0/1", "Pending", "0", "<none>", "node-2", "<none>", "<none>"
            ]),
        ],
        "{r}"
    );
    let r = c.k(&["get", "pods", "-A"]).run().ok();
    assert_eq!(
        table(r.out(), 1)[..2],
        [
            row(&["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS"]),
            row(&["default", "db", "0/1", "Pending", "0"]),
        ],
        "{r}"
    );
    assert!(
        r.requested(&["GET", "/api/v1/pods?limit=500", "200"]),
        "{r}"
    );
    // --show-labels reads the rows' metadata.
    let r = c.k(&["get", "pod", "db", "--show-labels"]).run().ok();
    assert_eq!(
        table(r.out(), 0)[1].last().map(String::as_str),
        Some("app=db"),
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn selectors_paging_jsonpath_and_not_found() {
    let c = KubeCluster::start().await;
    three_pods(&c);
    let names = |args: &[&str]| {
        let mut a = vec!["get", "pods", "-o", "name"];
        a.extend_from_slice(args);
        c.k(&a).run().ok().out().to_string()
    };
    assert_eq!(names(&["-l", "app=web"]), "pod/web-a\npod/web-b");
    assert_eq!(names(&["-l", "app!=web"]), "pod/db");
    assert_eq!(
        names(&["--field-selector", "spec.nodeName=node-1"]),
        "pod/db\npod/web-a"
    );
    assert_eq!(
        names(&["-l", "app=web", "--field-selector", "spec.nodeName=node-1"]),
        "pod/web-a"
    );
    let r = c
        .k(&["get", "pods", "--field-selector", "spec.nodeName=node-3"])
        .run()
        .ok();
    assert_eq!(
        (r.out(), r.err()),
        ("", "No resources found in default namespace."),
        "{r}"
    );

    // Paging: a page per pod, each following the last one's continue token, printed as one
    // table.
    let r = c.k(&["get", "pods", "--chunk-size=1"]).run().ok();
    assert_eq!(r.out().lines().count(), 4, "{r}");
    let pages: Vec<String> = r
        .requests()
        .into_iter()
        .filter(|q| q.contains("/pods?"))
        .collect();
    assert_eq!(pages.len(), 3, "{r}");
    assert!(pages[0].contains("?limit=1 "), "{r}");
    assert!(
        pages[1..]
            .iter()
            .all(|p| p.contains("continue=") && p.contains("limit=1")),
        "{r}"
    );

    // int64 fields are JSON numbers.
    let r = c
        .k(&[
            "get",
            "pod",
            "db",
            "-o",
            "jsonpath={.spec.terminationGracePeriodSeconds}",
        ])
        .run()
        .ok();
    assert_eq!(r.out(), "30", "{r}");
    let r = c
        .k(&["get", "pod", "db", "-o", "jsonpath={.metadata.generation}"])
        .run()
        .ok();
    assert_eq!(r.out(), "1", "{r}");

    for v in [Kubectl::V1_29, Kubectl::V1_37] {
        let r = c.kubectl(v, &["get", "pod", "nosuch"]).run().fails();
        assert_eq!(
            (r.code, r.out(), r.err()),
            (
                Some(1),
                "",
                "Error from server (NotFound): pods \"nosuch\" not found"
            ),
            "{r}"
        );
    }
    let r = c.k(&["get", "nosuchkind"]).run().fails();
    assert_eq!(
        r.err(),
        "error: the server doesn't have a resource type \"nosuchkind\"",
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn describe_shows_the_events_about_a_pod() {
    let c = KubeCluster::start().await;
    let _agent = c.agent("node-1", Duration::from_secs(1));
    c.create("web.yaml", &pod_yaml("web", "node-1", &[("app", "web")]))
        .ok();
    // The agent starts the pod and records Scheduled and Started.
    let mut last = None;
    for _ in 0..300 {
        let r = c.k(&["describe", "pod", "web"]).run().ok();
        if r.out().contains("Started container nginx") {
            last = Some(r);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let r = last.expect("the agent's Started event within 30 s");
    let text = r.out();
    // kubectl aligns the values by the longest label of the block, and the agent reports
    // the node's IP after "node-1/": compare the words of each line, by prefix.
    for line in [
        "Name: web",
        "Namespace: default",
        "Node: node-1/",
        "Labels: app=web",
        "Status: Running",
        "QoS Class: Burstable",
    ] {
        assert!(
            text.lines().any(|l| l
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .starts_with(line)),
            "no {line:?}:{r}"
        );
    }
    // The typed client (protobuf preferred, JSON answered) decoded the pod: int64 fields
    // are numbers, and the events were found by their involvedObject.
    assert!(
        r.requested(&[
            "GET",
            "/api/v1/namespaces/default/events?fieldSelector=",
            "involvedObject.name%3Dweb",
            "200"
        ]),
        "{r}"
    );
    let events = text
        .split_once("Events:")
        .map(|(_, e)| e)
        .unwrap_or_default();
    let rows: Vec<Vec<String>> = events
        .lines()
        .skip(1)
        .map(|l| {
            let mut c = cells(l);
            if c.len() > 2 {
                c.remove(2); // Age
            }
            c
        })
        .collect();
    assert_eq!(
        rows,
        [
            row(&["Type", "Reason", "From", "Message"]),
            row(&["----", "------", "----", "-------"]),
            row(&[
                "Normal",
                "Scheduled",
                "kubelet",
                "Successfully assigned default/web to node-1"
            ]),
            row(&["Normal", "Started", "kubelet", "Started container nginx"]),
        ],
        "{r}"
    );
    // kubectl 1.33's describe too.
    let r = c
        .kubectl(Kubectl::V1_33, &["describe", "pod", "web"])
        .run()
        .ok();
    assert!(r.out().contains("Started container nginx"), "{r}");
    let r = c.k(&["get", "pods"]).run().ok();
    assert_eq!(
        table(r.out(), 1)[1],
        row(&["web", "1/1", "Running", "0"]),
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn get_watch_prints_a_row_per_change() {
    let c = KubeCluster::start().await;
    c.create("web.yaml", &pod_yaml("web", "node-1", &[])).ok();
    let mut watch = c.k(&["get", "pods", "-w"]).spawn();
    let mut one = c.k(&["get", "pod", "web", "-w"]).spawn();
    let wait = Duration::from_secs(30);
    watch.wait_lines(2, wait);
    one.wait_lines(2, wait);
    c.k(&["label", "pod", "web", "color=blue"]).run().ok();
    watch.wait_lines(3, wait);
    one.wait_lines(3, wait);
    // A forced delete: the pod is marked (grace 0), then deleted.
    let r = c
        .k(&["delete", "pod", "web", "--grace-period=0", "--force"])
        .run()
        .ok();
    assert_eq!(
        r.out(),
        "pod \"web\" force deleted from default namespace",
        "{r}"
    );
    assert_eq!(
        r.err(),
        "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.",
        "{r}"
    );
    let want = [
        row(&["NAME", "READY", "STATUS", "RESTARTS"]),
        row(&["web", "0/1", "Pending", "0"]),
        row(&["web", "0/1", "Pending", "0"]),
        row(&["web", "0/1", "Terminating", "0"]),
        row(&["web", "0/1", "Terminating", "0"]),
    ];
    watch.wait_lines(5, wait);
    // Nothing more comes: the rows are the whole output, no duplicate or stray event.
    std::thread::sleep(Duration::from_millis(500));
    let run = watch.stop();
    assert_eq!(table(run.out(), 1), want, "{run}");
    // Watches ask for Tables from the list's resourceVersion.
    assert!(
        run.requested(&[
            "GET",
            "/api/v1/namespaces/default/pods?resourceVersion=",
            "watch=true",
            "200"
        ]),
        "{run}"
    );
    // The single-object watch printed the object once, then its changes: the same rows.
    one.wait_lines(5, wait);
    std::thread::sleep(Duration::from_millis(500));
    let run = one.stop();
    assert_eq!(table(run.out(), 1), want, "{run}");
}

const EVENT_YAML: &str = "apiVersion: v1
kind: Event
metadata:
  name: web.backoff
involvedObject:
  apiVersion: v1
  kind: Pod
  name: web
  namespace: default
  fieldPath: spec.containers{c}
reason: BackOff
message: Back-off restarting failed container
type: Warning
count: 3
firstTimestamp: \"2026-01-02T03:04:05Z\"
lastTimestamp: \"2026-01-02T03:09:05Z\"
source:
  component: kubelet
  host: node-1
";

/// Upstream's Event table (its columns and their order, `-o wide`'s too) and the default
/// table of a definition (NAME and CREATED AT), cell by cell.
#[tokio::test(flavor = "multi_thread")]
async fn events_and_definitions_print_upstreams_tables() {
    let c = KubeCluster::start().await;
    c.create("ev.yaml", EVENT_YAML).ok();
    // LAST SEEN (and FIRST SEEN) are ages: left out.
    let without = |text: &str, drop: &[usize]| -> Vec<Vec<String>> {
        text.lines()
            .map(|l| {
                cells(l)
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| !drop.contains(i))
                    .map(|(_, c)| c)
                    .collect()
            })
            .collect()
    };
    let r = c.k(&["get", "events"]).run().ok();
    assert_eq!(
        without(r.out(), &[0]),
        [
            row(&["TYPE", "REASON", "OBJECT", "MESSAGE"]),
            row(&[
                "Warning",
                "BackOff",
                "pod/web",
                "Back-off restarting failed container"
            ]),
        ],
        "{r}"
    );
    assert!(r.out().starts_with("LAST SEEN"), "{r}");
    let r = c.k(&["get", "events", "-o", "wide"]).run().ok();
    assert_eq!(
        without(r.out(), &[0, 7]),
        [
            row(&[
                "TYPE",
                "REASON",
                "OBJECT",
                "SUBOBJECT",
                "SOURCE",
                "MESSAGE",
                "COUNT",
                "NAME"
            ]),
            row(&[
                "Warning",
                "BackOff",
                "pod/web",
                "spec.containers{c}",
                "kubelet, node-1",
                "Back-off restarting failed container",
                "3",
                "web.backoff"
            ]),
        ],
        "{r}"
    );
    c.crontab_crd();
    let r = c.k(&["get", "crd"]).run().ok();
    let table = table(r.out(), 0);
    assert_eq!(table.len(), 2, "{r}");
    assert_eq!(table[0], row(&["NAME", "CREATED AT"]), "{r}");
    assert_eq!(table[1][0], "crontabs.stable.example.com", "{r}");
    let created = c
        .k(&[
            "get",
            "crd",
            "crontabs.stable.example.com",
            "-o",
            "jsonpath={.metadata.creationTimestamp}",
        ])
        .run()
        .ok();
    assert_eq!(
        table[1][1],
        created.out(),
        "CREATED AT is the timestamp: {r}"
    );
}
