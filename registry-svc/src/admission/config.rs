//! Admission's flags, as kube-apiserver's: `--admission-control-config-file` (an
//! `apiserver.config.k8s.io/v1` AdmissionConfiguration whose plugins' configurations are
//! inline or in files of their own), `--enable-admission-plugins` and
//! `--disable-admission-plugins`. Read and validated once at start: a mistake stops
//! registry-svc, naming the flag, the file and the field.
//!
//! Of upstream's plugins kubestore has `PodSecurity` (configured by a
//! `pod-security.admission.config.k8s.io/v1` PodSecurityConfiguration) and
//! `ValidatingAdmissionPolicy`, `MutatingAdmissionWebhook`, `ValidatingAdmissionWebhook` and
//! `ResourceQuota` (no configuration; on by default); the others' names are
//! accepted (a command line written for kube-apiserver works) and do nothing here: the
//! README's deviations say which.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::pod_security::{
    PodSecurityConfig,
    checks::{Level, Version},
};

/// Upstream's admission plugins (1.33's `AllOrderedPlugins`).
const KNOWN: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// The flags.
#[derive(clap::Args, Clone, Debug, Default)]
#[group(id = "admission")]
pub struct Flags {
    /// An AdmissionConfiguration (`apiserver.config.k8s.io/v1`, YAML or JSON): each plugin's
    /// configuration, inline (`configuration`) or in a file (`path`, relative to this one).
    #[arg(
        long = "admission-control-config-file",
        env = "ADMISSION_CONTROL_CONFIG_FILE"
    )]
    pub config_file: Option<PathBuf>,
    /// Plugins to enable besides the default ones (upstream's names, comma separated).
    #[arg(
        long = "enable-admission-plugins",
        env = "ENABLE_ADMISSION_PLUGINS",
        value_delimiter = ','
    )]
    pub enable: Vec<String>,
    /// Default plugins to disable (upstream's names, comma separated): `PodSecurity`.
    #[arg(
        long = "disable-admission-plugins",
        env = "DISABLE_ADMISSION_PLUGINS",
        value_delimiter = ','
    )]
    pub disable: Vec<String>,
}

/// What the flags say.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// PodSecurity's configuration; None when the plugin is disabled.
    pub pod_security: Option<PodSecurityConfig>,
    /// Whether `ValidatingAdmissionPolicy` is on (it is unless disabled, as upstream).
    pub validating_admission_policy: bool,
    /// Whether `MutatingAdmissionWebhook` is on (unless disabled).
    pub mutating_admission_webhook: bool,
    /// Whether `ValidatingAdmissionWebhook` is on (unless disabled).
    pub validating_admission_webhook: bool,
    /// Whether `ResourceQuota` is on (unless disabled).
    pub resource_quota: bool,
}

impl Flags {
    /// The settings, or why not (naming the flag and the field).
    pub fn settings(&self) -> Result<Settings, String> {
        for (flag, names) in [
            ("--enable-admission-plugins", &self.enable),
            ("--disable-admission-plugins", &self.disable),
        ] {
            for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
                if !KNOWN.contains(&name) {
                    return Err(format!("{flag}: plugin {name:?} is unknown"));
                }
            }
        }
        if let Some(both) = self
            .enable
            .iter()
            .find(|n| self.disable.iter().any(|d| d.trim() == n.trim()))
        {
            return Err(format!(
                "--enable-admission-plugins and --disable-admission-plugins both name {both:?}"
            ));
        }
        let disabled = |plugin: &str| self.disable.iter().any(|n| n.trim() == plugin);
        let pod_security = match &self.config_file {
            None => PodSecurityConfig::default(),
            Some(file) => read(file)?.unwrap_or_default(),
        };
        Ok(Settings {
            pod_security: (!disabled("PodSecurity")).then_some(pod_security),
            validating_admission_policy: !disabled("ValidatingAdmissionPolicy"),
            mutating_admission_webhook: !disabled("MutatingAdmissionWebhook"),
            validating_admission_webhook: !disabled("ValidatingAdmissionWebhook"),
            resource_quota: !disabled("ResourceQuota"),
        })
    }
}

/// PodSecurity's configuration in the AdmissionConfiguration `file`, if it has one.
fn read(file: &Path) -> Result<Option<PodSecurityConfig>, String> {
    let flag = "--admission-control-config-file";
    let config = load(file).map_err(|e| format!("{flag} {}: {e}", file.display()))?;
    let kind = (
        config.get("apiVersion").and_then(Value::as_str),
        config.get("kind").and_then(Value::as_str),
    );
    if !matches!(
        kind,
        (
            Some("apiserver.config.k8s.io/v1" | "apiserver.k8s.io/v1alpha1"),
            Some("AdmissionConfiguration")
        )
    ) {
        return Err(format!(
            "{flag} {}: not an AdmissionConfiguration of apiserver.config.k8s.io/v1 (apiVersion {:?}, kind {:?})",
            file.display(),
            kind.0.unwrap_or(""),
            kind.1.unwrap_or("")
        ));
    }
    let plugins = config
        .get("plugins")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut found = None;
    for (i, p) in plugins.iter().enumerate() {
        let name = p.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            return Err(format!(
                "{flag} {}: plugins[{i}].name is required",
                file.display()
            ));
        }
        if name != "PodSecurity" {
            continue;
        }
        let configuration = match (
            p.get("configuration"),
            p.get("path").and_then(Value::as_str),
        ) {
            (Some(c), _) => c.clone(),
            (None, Some(path)) => {
                let path = file.parent().unwrap_or(Path::new(".")).join(path);
                load(&path).map_err(|e| {
                    format!(
                        "{flag} {}: plugins[{i}].path {}: {e}",
                        file.display(),
                        path.display()
                    )
                })?
            }
            (None, None) => continue,
        };
        found = Some(
            PodSecurityConfig::from_json(&configuration)
                .map_err(|e| format!("{flag} {}: PodSecurity: {e}", file.display()))?,
        );
    }
    Ok(found)
}

/// A YAML or JSON file as JSON.
fn load(path: &Path) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    kubestore_apimachinery::yaml::to_json(&bytes).map_err(|e| e.to_string())
}

/// Upstream's `ValidatePodSecurityConfiguration` messages for a level and a version.
pub(crate) fn level(path: &str, value: &str) -> Result<Level, String> {
    Level::parse(value).ok_or_else(|| {
        format!("{path}: Invalid value: {value:?}: must be one of privileged, baseline, restricted")
    })
}

/// See [`level`].
pub(crate) fn version(path: &str, value: &str) -> Result<Version, String> {
    Version::parse(value)
        .ok_or_else(|| format!("{path}: Invalid value: {value:?}: must be \"latest\" or \"v1.x\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of this test's, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn flags(yaml: &str) -> (Dir, Flags) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = Dir(std::env::temp_dir().join(format!(
            "kubestore-admission-config-{}-{n}",
            std::process::id()
        )));
        std::fs::create_dir_all(dir.path()).expect("dir");
        let file = dir.path().join("admission.yaml");
        std::fs::write(&file, yaml).expect("write");
        let flags = Flags {
            config_file: Some(file),
            ..Default::default()
        };
        (dir, flags)
    }

    #[test]
    fn an_inline_pod_security_configuration_is_read() {
        let (_dir, f) = flags(
            r#"
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: baseline, warn: restricted, warn-version: v1.30}
    exemptions: {namespaces: [kube-system], usernames: [admin], runtimeClasses: [kata]}
"#,
        );
        let s = f.settings().expect("valid").pod_security.expect("enabled");
        assert_eq!(s.defaults.enforce.0, Level::Baseline);
        assert_eq!(s.defaults.warn, (Level::Restricted, Version::Minor(30)));
        assert_eq!(s.defaults.audit, (Level::Privileged, Version::Latest));
        assert_eq!(s.exemptions.namespaces, vec!["kube-system".to_string()]);
        assert_eq!(s.exemptions.usernames, vec!["admin".to_string()]);
        assert_eq!(s.exemptions.runtime_classes, vec!["kata".to_string()]);
    }

    #[test]
    fn a_configuration_in_a_file_of_its_own_is_read_relative_to_the_first() {
        let (dir, f) = flags(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  path: psa.yaml\n",
        );
        std::fs::write(
            dir.path().join("psa.yaml"),
            "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\ndefaults: {enforce: restricted}\n",
        )
        .expect("write");
        let s = f.settings().expect("valid").pod_security.expect("enabled");
        assert_eq!(s.defaults.enforce.0, Level::Restricted);
    }

    #[test]
    fn mistakes_stop_the_server_naming_the_field() {
        let bad = |body: &str, want: &str| {
            let (_dir, f) = flags(&format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n{body}"
            ));
            let e = f.settings().expect_err("refused");
            assert!(e.contains(want), "{e:?} does not say {want:?}");
        };
        bad(
            "    defaults: {enforce: strict}\n",
            "defaults.enforce: Invalid value: \"strict\": must be one of privileged, baseline, restricted",
        );
        bad(
            "    defaults: {audit-version: \"1.25\"}\n",
            "defaults.audit-version: Invalid value: \"1.25\": must be \"latest\" or \"v1.x\"",
        );
        bad(
            "    exemptions: {namespaces: [Bad_Name]}\n",
            "exemptions.namespaces[0]: Invalid value: \"Bad_Name\"",
        );
        bad(
            "    exemptions: {usernames: [a, a]}\n",
            "exemptions.usernames[1]: Duplicate value: \"a\"",
        );
        let (_dir, f) = flags("apiVersion: v1\nkind: ConfigMap\n");
        assert!(
            f.settings()
                .expect_err("refused")
                .contains("not an AdmissionConfiguration")
        );
    }

    #[test]
    fn plugins_are_enabled_and_disabled_by_upstreams_names() {
        let f = Flags {
            disable: vec!["PodSecurity".into()],
            ..Default::default()
        };
        assert!(f.settings().expect("valid").pod_security.is_none());
        let f = Flags {
            enable: vec!["NodeRestriction".into()],
            ..Default::default()
        };
        assert!(f.settings().expect("valid").pod_security.is_some());
        let f = Flags {
            enable: vec!["PodSecurityPolicy".into()],
            ..Default::default()
        };
        assert_eq!(
            f.settings().expect_err("unknown"),
            "--enable-admission-plugins: plugin \"PodSecurityPolicy\" is unknown"
        );
    }
}
