//! The objects the real-client tests create: pods, the CronTab definition of Kubernetes'
//! documentation and its objects, as manifests kubectl takes.

use std::time::{Duration, Instant};

use super::KubeCluster;
use super::run::Run;

/// A Pod manifest: one `nginx` container with a CPU request, on `node` ("" for none).
pub fn pod_yaml(name: &str, node: &str, labels: &[(&str, &str)]) -> String {
    let labels: String = labels
        .iter()
        .map(|(k, v)| format!("    {k}: \"{v}\"\n"))
        .collect();
    let labels = if labels.is_empty() {
        String::new()
    } else {
        format!("  labels:\n{labels}")
    };
    let node = if node.is_empty() {
        String::new()
    } else {
        format!("  nodeName: {node}\n")
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n{labels}spec:\n{node}  containers:\n  - name: nginx\n    image: nginx:1.27\n    resources:\n      requests:\n        cpu: 100m\n"
    )
}

/// The CronTab definition of Kubernetes' documentation ("Extend the Kubernetes API with
/// CustomResourceDefinitions"), with its printer columns (`Spec`, `Replicas`, `Age`).
pub const CRONTAB_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
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
      description: The cron spec defining the interval a CronJob is run
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      description: The number of jobs launched by the CronJob
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
"#;

/// A CronTab object.
pub fn crontab_yaml(name: &str, cron_spec: &str, replicas: i64) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\nspec:\n  cronSpec: \"{cron_spec}\"\n  image: my-awesome-cron-image\n  replicas: {replicas}\n"
    )
}

impl KubeCluster {
    /// Applies [`CRONTAB_CRD`] and waits until kubectl can list CronTabs (the definition is
    /// established and served).
    pub fn crontab_crd(&self) {
        let f = self.file("crontab-crd.yaml", CRONTAB_CRD);
        self.k(&["apply", "-f", f.to_str().expect("path")])
            .run()
            .ok();
        let mut last = None;
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            let r = self.k(&["get", "crontabs"]).run();
            if r.code == Some(0) {
                return;
            }
            last = Some(r);
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "CronTabs never served:{}",
            last.map(|r| r.to_string()).unwrap_or_default()
        );
    }

    /// `kubectl 1.37 create -f` of a manifest.
    pub fn create(&self, name: &str, manifest: &str) -> Run {
        let f = self.file(name, manifest);
        self.k(&["create", "-f", f.to_str().expect("path")]).run()
    }
}
