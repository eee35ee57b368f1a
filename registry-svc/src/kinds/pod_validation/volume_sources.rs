//! One volume's source: upstream's `validateVolumeSource` (one source, in upstream's order and
//! with its path quirks: a second `cephfs` is Forbidden at `cephFS`, a second `downwardAPI` at
//! `downwarAPI`, and a `gcePersistentDisk`'s own fields are at `persistentDisk`) and the rules of
//! every source but the downward API, projected and ephemeral ones (`volume_projected`,
//! `volume_claim`). Messages are upstream's (`pkg/apis/core/validation/validation.go`, 1.33).

use kubestore_proto::core::v1::{
    AwsElasticBlockStoreVolumeSource, AzureDiskVolumeSource, CsiVolumeSource, EmptyDirVolumeSource,
    FcVolumeSource, FlexVolumeSource, FlockerVolumeSource, GcePersistentDiskVolumeSource,
    GitRepoVolumeSource, HostPathVolumeSource, ImageVolumeSource, IscsiVolumeSource,
    NfsVolumeSource, QuobyteVolumeSource, StorageOsVolumeSource, Volume,
};

use super::{
    claim, file_mode, go_strings, key_to_path, label, local_descending_path, no_backsteps,
    projected, subdomain,
};
use crate::{
    kinds::pod_validation::{not_supported, one_of},
    quantity::Quantity,
    violations::Violations,
};

/// Upstream's `supportedHostPathTypes`, sorted as its error lists them.
const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];

/// `validation.InclusiveRangeError(0, 255)`.
const LUN_RANGE: &str = "must be between 0 and 255, inclusive";

/// Upstream's `pdPartitionErrorMsg`: says 1 while the check allows 0, as upstream does.
const PARTITION_RANGE: &str = "must be between 1 and 255, inclusive";

/// How many sources were seen so far, and where the volume is.
struct Seen<'a> {
    path: &'a str,
    count: usize,
}

impl Seen<'_> {
    /// Whether this present source is the first; a later one is Forbidden at `name` and not
    /// validated further.
    fn first(&mut self, name: &str, v: &mut Violations) -> bool {
        if self.count > 0 {
            v.push((
                self.at(name),
                "Forbidden: may not specify more than 1 volume type".into(),
            ));
            return false;
        }
        self.count += 1;
        true
    }

    fn at(&self, name: &str) -> String {
        format!("{}.{name}", self.path)
    }
}

/// `validateVolumeSource` for the volume at `path` (`spec.volumes[i]`).
pub(super) fn validate(vol: &Volume, path: &str, v: &mut Violations) {
    let mut s = Seen { path, count: 0 };
    if let Some(src) = &vol.empty_dir {
        s.count += 1;
        empty_dir(src, &s.at("emptyDir"), v);
    }
    if let Some(src) = &vol.host_path
        && s.first("hostPath", v)
    {
        host_path(src, &s.at("hostPath"), v);
    }
    if let Some(src) = &vol.git_repo
        && s.first("gitRepo", v)
    {
        git_repo(src, &s.at("gitRepo"), v);
    }
    if let Some(src) = &vol.gce_persistent_disk
        && s.first("gcePersistentDisk", v)
    {
        gce_persistent_disk(src, &s.at("persistentDisk"), v);
    }
    if let Some(src) = &vol.aws_elastic_block_store
        && s.first("awsElasticBlockStore", v)
    {
        aws_elastic_block_store(src, &s.at("awsElasticBlockStore"), v);
    }
    if let Some(src) = &vol.secret
        && s.first("secret", v)
    {
        let at = s.at("secret");
        required(&src.secret_name, &format!("{at}.secretName"), v);
        file_mode(src.default_mode, &format!("{at}.defaultMode"), v);
        for (i, kp) in src.items.iter().enumerate() {
            key_to_path(kp, &format!("{at}.items[{i}]"), v);
        }
    }
    if let Some(src) = &vol.nfs
        && s.first("nfs", v)
    {
        nfs(src, &s.at("nfs"), v);
    }
    if let Some(src) = &vol.iscsi {
        if s.first("iscsi", v) {
            iscsi(src, &s.at("iscsi"), v);
        }
        // Checked whether or not iscsi is the first source, at the volume's name.
        if src.initiator_name.is_some() && vol.name.len() + 1 + src.target_portal.len() > 64 {
            v.push((
                s.at("name"),
                format!(
                    "Invalid value: {:?}: Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
                    vol.name
                ),
            ));
        }
    }
    if let Some(src) = &vol.glusterfs
        && s.first("glusterfs", v)
    {
        let at = s.at("glusterfs");
        required(&src.endpoints, &format!("{at}.endpoints"), v);
        required(&src.path, &format!("{at}.path"), v);
    }
    if let Some(src) = &vol.flocker
        && s.first("flocker", v)
    {
        flocker(src, &s.at("flocker"), v);
    }
    if let Some(src) = &vol.persistent_volume_claim
        && s.first("persistentVolumeClaim", v)
    {
        let at = s.at("persistentVolumeClaim");
        required(&src.claim_name, &format!("{at}.claimName"), v);
    }
    if let Some(src) = &vol.rbd
        && s.first("rbd", v)
    {
        let at = s.at("rbd");
        if src.monitors.is_empty() {
            v.push((format!("{at}.monitors"), "Required value".into()));
        }
        required(&src.image, &format!("{at}.image"), v);
    }
    if let Some(src) = &vol.cinder
        && s.first("cinder", v)
    {
        let at = s.at("cinder");
        required(&src.volume_id, &format!("{at}.volumeID"), v);
        if let Some(r) = &src.secret_ref {
            required(&r.name, &format!("{at}.secretRef.name"), v);
        }
    }
    if let Some(src) = &vol.cephfs
        && s.first("cephFS", v)
        && src.monitors.is_empty()
    {
        v.push((s.at("cephfs.monitors"), "Required value".into()));
    }
    if let Some(src) = &vol.quobyte
        && s.first("quobyte", v)
    {
        quobyte(src, &s.at("quobyte"), v);
    }
    if let Some(src) = &vol.downward_api
        && s.first("downwarAPI", v)
    {
        projected::downward_api(src, &s.at("downwardAPI"), v);
    }
    if let Some(src) = &vol.fc
        && s.first("fc", v)
    {
        fc(src, &s.at("fc"), v);
    }
    if let Some(src) = &vol.flex_volume
        && s.first("flexVolume", v)
    {
        flex_volume(src, &s.at("flexVolume"), v);
    }
    if let Some(src) = &vol.config_map
        && s.first("configMap", v)
    {
        let at = s.at("configMap");
        required(&src.name, &format!("{at}.name"), v);
        file_mode(src.default_mode, &format!("{at}.defaultMode"), v);
        for (i, kp) in src.items.iter().enumerate() {
            key_to_path(kp, &format!("{at}.items[{i}]"), v);
        }
    }
    if let Some(src) = &vol.azure_file
        && s.first("azureFile", v)
    {
        let at = s.at("azureFile");
        required(&src.secret_name, &format!("{at}.secretName"), v);
        required(&src.share_name, &format!("{at}.shareName"), v);
    }
    if let Some(src) = &vol.vsphere_volume
        && s.first("vsphereVolume", v)
    {
        required(&src.volume_path, &s.at("vsphereVolume.volumePath"), v);
    }
    if let Some(src) = &vol.photon_persistent_disk
        && s.first("photonPersistentDisk", v)
    {
        required(&src.pd_id, &s.at("photonPersistentDisk.pdID"), v);
    }
    if let Some(src) = &vol.portworx_volume
        && s.first("portworxVolume", v)
    {
        required(&src.volume_id, &s.at("portworxVolume.volumeID"), v);
    }
    if let Some(src) = &vol.azure_disk
        && s.first("azureDisk", v)
    {
        azure_disk(src, &s.at("azureDisk"), v);
    }
    if let Some(src) = &vol.storageos
        && s.first("storageos", v)
    {
        storageos(src, &s.at("storageos"), v);
    }
    if let Some(src) = &vol.projected
        && s.first("projected", v)
    {
        projected::projected(src, &s.at("projected"), v);
    }
    if let Some(src) = &vol.scale_io
        && s.first("scaleIO", v)
    {
        let at = s.at("scaleIO");
        required(&src.gateway, &format!("{at}.gateway"), v);
        required(&src.system, &format!("{at}.system"), v);
        required(&src.volume_name, &format!("{at}.volumeName"), v);
    }
    if let Some(src) = &vol.csi
        && s.first("csi", v)
    {
        csi(src, &s.at("csi"), v);
    }
    if let Some(src) = &vol.ephemeral
        && s.first("ephemeral", v)
    {
        // Upstream then checks the claim's name `<pod>-<volume>`, which needs the pod's name.
        claim::ephemeral(src, &s.at("ephemeral"), v);
    }
    if let Some(src) = &vol.image
        && s.first("image", v)
    {
        image(src, &s.at("image"), v);
    }
    if s.count == 0 {
        v.push((
            path.to_string(),
            "Required value: must specify a volume type".into(),
        ));
    }
}

/// A required string field.
fn required(value: &str, at: &str, v: &mut Violations) {
    if value.is_empty() {
        v.push((at.to_string(), "Required value".into()));
    }
}

/// A negative size limit is Forbidden (upstream's words); one that does not parse is Invalid
/// here, where upstream's decoding refuses it.
fn empty_dir(s: &EmptyDirVolumeSource, at: &str, v: &mut Violations) {
    let Some(q) = &s.size_limit else { return };
    let at = format!("{at}.sizeLimit");
    match Quantity::parse(q) {
        Err(e) => v.push((at, format!("Invalid value: {q:?}: {e}"))),
        Ok(n) if n < Quantity::ZERO => v.push((
            at,
            "Forbidden: SizeLimit field must be a valid resource quantity".into(),
        )),
        Ok(_) => {}
    }
}

/// `validateHostPathVolumeSource`: the path required (and then nothing else), without `..`,
/// and a known type.
fn host_path(s: &HostPathVolumeSource, at: &str, v: &mut Violations) {
    if s.path.is_empty() {
        v.push((format!("{at}.path"), "Required value".into()));
        return;
    }
    no_backsteps(&s.path, &format!("{at}.path"), v);
    if let Some(t) = &s.r#type
        && !HOST_PATH_TYPES.contains(&t.as_str())
    {
        v.push((format!("{at}.type"), not_supported(t, HOST_PATH_TYPES)));
    }
}

fn git_repo(s: &GitRepoVolumeSource, at: &str, v: &mut Violations) {
    required(&s.repository, &format!("{at}.repository"), v);
    local_descending_path(&s.directory, &format!("{at}.directory"), v);
}

fn gce_persistent_disk(s: &GcePersistentDiskVolumeSource, at: &str, v: &mut Violations) {
    required(&s.pd_name, &format!("{at}.pdName"), v);
    partition(s.partition, &format!("{at}.partition"), v);
}

fn aws_elastic_block_store(s: &AwsElasticBlockStoreVolumeSource, at: &str, v: &mut Violations) {
    required(&s.volume_id, &format!("{at}.volumeID"), v);
    partition(s.partition, &format!("{at}.partition"), v);
}

fn partition(p: i32, at: &str, v: &mut Violations) {
    if !(0..=255).contains(&p) {
        v.push((
            at.to_string(),
            format!("Invalid value: {p}: {PARTITION_RANGE}"),
        ));
    }
}

/// `validateNFSVolumeSource`: an empty path is both Required and not absolute, as upstream.
fn nfs(s: &NfsVolumeSource, at: &str, v: &mut Violations) {
    required(&s.server, &format!("{at}.server"), v);
    required(&s.path, &format!("{at}.path"), v);
    if !s.path.starts_with('/') {
        v.push((
            format!("{at}.path"),
            format!("Invalid value: {:?}: must be an absolute path", s.path),
        ));
    }
}

/// `validateISCSIVolumeSource`. The initiator's path is `initiatorname`, in lower case, as
/// upstream writes it.
fn iscsi(s: &IscsiVolumeSource, at: &str, v: &mut Violations) {
    const STARTING: &str = "must be valid format starting with iqn, eui, or naa";
    required(&s.target_portal, &format!("{at}.targetPortal"), v);
    if s.iqn.is_empty() {
        v.push((format!("{at}.iqn"), "Required value".into()));
    } else if !has_iscsi_prefix(&s.iqn) {
        v.push((
            format!("{at}.iqn"),
            format!("Invalid value: {:?}: {STARTING}", s.iqn),
        ));
    } else if !iscsi_name_well_formed(&s.iqn) {
        v.push((
            format!("{at}.iqn"),
            format!("Invalid value: {:?}: must be valid format", s.iqn),
        ));
    }
    if !(0..=255).contains(&s.lun) {
        v.push((
            format!("{at}.lun"),
            format!("Invalid value: {}: {LUN_RANGE}", s.lun),
        ));
    }
    if (s.chap_auth_discovery || s.chap_auth_session) && s.secret_ref.is_none() {
        v.push((format!("{at}.secretRef"), "Required value".into()));
    }
    if let Some(name) = &s.initiator_name {
        let at = format!("{at}.initiatorname");
        if !has_iscsi_prefix(name) {
            v.push((at.clone(), format!("Invalid value: {name:?}: {STARTING}")));
        }
        if !iscsi_name_well_formed(name) {
            v.push((at, format!("Invalid value: {name:?}: must be valid format")));
        }
    }
}

fn has_iscsi_prefix(name: &str) -> bool {
    ["iqn", "eui", "naa"].iter().any(|p| name.starts_with(p))
}

/// Upstream's three patterns for a name with a known prefix; true for any other name.
fn iscsi_name_well_formed(name: &str) -> bool {
    if name.starts_with("iqn") {
        iqn_matches(name)
    } else if let Some(rest) = name.strip_prefix("eui") {
        any_then_alnum(rest, 16)
    } else if let Some(rest) = name.strip_prefix("naa") {
        any_then_alnum(rest, 32)
    } else {
        true
    }
}

/// `iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`, unanchored at the start as upstream's
/// pattern is: some `iqn.` in the name must begin a match that runs to its end.
fn iqn_matches(name: &str) -> bool {
    name.match_indices("iqn.").any(|(i, _)| {
        let tail = &name[i + 4..];
        let b = tail.as_bytes();
        if b.len() < 8
            || !b[..4].iter().all(u8::is_ascii_digit)
            || b[4] != b'-'
            || !b[5..7].iter().all(u8::is_ascii_digit)
            || b[7] != b'.'
        {
            return false;
        }
        // The domain part has no ':', so the first ':' ends it.
        let Some((domain, rest)) = tail[8..].split_once(':') else {
            return false;
        };
        !domain.is_empty()
            && domain
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.')
            && !rest.is_empty()
            && !rest
                .chars()
                .any(|c| ",;*&$|".contains(c) || matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' '))
    })
}

/// `.[[:alnum:]]{n}$` after the prefix: any one character but a newline, then exactly `n` ASCII
/// letters or digits.
fn any_then_alnum(rest: &str, n: usize) -> bool {
    let mut chars = rest.chars();
    matches!(chars.next(), Some(c) if c != '\n') && {
        let tail = chars.as_str();
        tail.len() == n && tail.bytes().all(|c| c.is_ascii_alphanumeric())
    }
}

/// `validateFlockerVolumeSource`: the first two at the source's own path.
fn flocker(s: &FlockerVolumeSource, at: &str, v: &mut Violations) {
    if s.dataset_name.is_empty() && s.dataset_uuid.is_empty() {
        v.push((
            at.to_string(),
            "Required value: one of datasetName and datasetUUID is required".into(),
        ));
    }
    if !s.dataset_name.is_empty() && !s.dataset_uuid.is_empty() {
        v.push((
            at.to_string(),
            "Invalid value: \"resource\": datasetName and datasetUUID can not be specified simultaneously"
                .into(),
        ));
    }
    if s.dataset_name.contains('/') {
        v.push((
            format!("{at}.datasetName"),
            format!("Invalid value: {:?}: must not contain '/'", s.dataset_name),
        ));
    }
}

/// `validateQuobyteVolumeSource`: one Invalid per bad `host:port` pair.
fn quobyte(s: &QuobyteVolumeSource, at: &str, v: &mut Violations) {
    const PAIRS: &str = "must be a host:port pair or multiple pairs separated by commas";
    if s.registry.is_empty() {
        v.push((format!("{at}.registry"), format!("Required value: {PAIRS}")));
    } else if s.tenant.len() >= 65 {
        v.push((
            format!("{at}.tenant"),
            "Required value: must be a UUID and may not exceed a length of 64 characters".into(),
        ));
    } else {
        for pair in s.registry.split(',') {
            if !is_host_port(pair) {
                v.push((
                    format!("{at}.registry"),
                    format!("Invalid value: {:?}: {PAIRS}", s.registry),
                ));
            }
        }
    }
    required(&s.volume, &format!("{at}.volume"), v);
}

/// Whether Go's `net.SplitHostPort` accepts `s`: a host and a port after the last ':', the
/// host bracketed if it holds a ':' (an empty host or port is fine).
fn is_host_port(s: &str) -> bool {
    let Some(last) = s.rfind(':') else {
        return false;
    };
    let (open_from, close_from) = if s.starts_with('[') {
        match s.find(']') {
            Some(end) if end + 1 == last => (1, end + 1),
            _ => return false,
        }
    } else {
        if s[..last].contains(':') {
            return false;
        }
        (0, 0)
    };
    !s[open_from..].contains('[') && !s[close_from..].contains(']')
}

/// `validateFCVolumeSource`.
fn fc(s: &FcVolumeSource, at: &str, v: &mut Violations) {
    let wwns = format!("{at}.targetWWNs");
    if s.target_wwns.is_empty() && s.wwids.is_empty() {
        v.push((
            wwns.clone(),
            "Required value: must specify either targetWWNs or wwids, but not both".into(),
        ));
    }
    if !s.target_wwns.is_empty() && !s.wwids.is_empty() {
        v.push((
            wwns,
            format!(
                "Invalid value: {}: targetWWNs and wwids can not be specified simultaneously",
                go_strings(&s.target_wwns)
            ),
        ));
    }
    if !s.target_wwns.is_empty() {
        match s.lun {
            None => v.push((
                format!("{at}.lun"),
                "Required value: lun is required if targetWWNs is specified".into(),
            )),
            Some(l) if !(0..=255).contains(&l) => v.push((
                format!("{at}.lun"),
                format!("Invalid value: {l}: {LUN_RANGE}"),
            )),
            Some(_) => {}
        }
    }
}

/// `validateFlexVolumeSource`: option keys may not be in a Kubernetes namespace.
fn flex_volume(s: &FlexVolumeSource, at: &str, v: &mut Violations) {
    required(&s.driver, &format!("{at}.driver"), v);
    for k in s.options.keys() {
        let namespace = k.split_once('/').map_or(k.as_str(), |(ns, _)| ns);
        let normalized = format!(".{}", namespace.to_lowercase());
        if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
            v.push((
                format!("{at}.options[{k}]"),
                format!("Invalid value: {k:?}: kubernetes.io and k8s.io namespaces are reserved"),
            ));
        }
    }
}

/// `validateAzureDisk`.
fn azure_disk(s: &AzureDiskVolumeSource, at: &str, v: &mut Violations) {
    const MANAGED: &[&str] = &[
        "/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}",
    ];
    const BLOB: &[&str] =
        &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"];
    required(&s.disk_name, &format!("{at}.diskName"), v);
    required(&s.disk_uri, &format!("{at}.diskURI"), v);
    let caching = &["None", "ReadOnly", "ReadWrite"];
    if let Some(c) = &s.caching_mode
        && !caching.contains(&c.as_str())
    {
        v.push((format!("{at}.cachingMode"), not_supported(c, caching)));
    }
    let kinds = &["Dedicated", "Managed", "Shared"];
    if let Some(k) = &s.kind
        && !kinds.contains(&k.as_str())
    {
        v.push((format!("{at}.kind"), not_supported(k, kinds)));
    }
    match s.kind.as_deref() {
        Some("Managed") if !s.disk_uri.starts_with("/subscriptions/") => {
            v.push((format!("{at}.diskURI"), not_supported(&s.disk_uri, MANAGED)))
        }
        Some(k) if k != "Managed" && !s.disk_uri.starts_with("https://") => {
            v.push((format!("{at}.diskURI"), not_supported(&s.disk_uri, BLOB)))
        }
        _ => {}
    }
}

/// `validateStorageOSVolumeSource`.
fn storageos(s: &StorageOsVolumeSource, at: &str, v: &mut Violations) {
    let name = format!("{at}.volumeName");
    if s.volume_name.is_empty() {
        v.push((name, "Required value".into()));
    } else if let Some(e) = label(&s.volume_name) {
        v.push((name, format!("Invalid value: {:?}: {e}", s.volume_name)));
    }
    if !s.volume_namespace.is_empty()
        && let Some(e) = label(&s.volume_namespace)
    {
        v.push((
            format!("{at}.volumeNamespace"),
            format!("Invalid value: {:?}: {e}", s.volume_namespace),
        ));
    }
    if let Some(r) = &s.secret_ref {
        required(&r.name, &format!("{at}.secretRef.name"), v);
    }
}

/// `validateCSIVolumeSource` with `ValidateCSIDriverName` (an empty driver is both Required
/// and Invalid, as upstream). A bad secret name is reported at `csi.name`, as upstream does.
fn csi(s: &CsiVolumeSource, at: &str, v: &mut Violations) {
    let driver = format!("{at}.driver");
    if s.driver.is_empty() {
        v.push((driver.clone(), "Required value".into()));
    }
    if s.driver.len() > 63 {
        v.push((
            driver.clone(),
            "Too long: may not be more than 63 bytes".into(),
        ));
    }
    if let Some(e) = subdomain(&s.driver.to_lowercase()) {
        v.push((driver, format!("Invalid value: {:?}: {e}", s.driver)));
    }
    if let Some(r) = &s.node_publish_secret_ref {
        if r.name.is_empty() {
            v.push((
                format!("{at}.nodePublishSecretRef.name"),
                "Required value".into(),
            ));
        } else if let Some(e) = subdomain(&r.name) {
            v.push((
                format!("{at}.name"),
                format!("Invalid value: {:?}: {e}", r.name),
            ));
        }
    }
}

/// `validateImageVolumeSource` for a pod: the reference required, and a pull policy (defaulted
/// from the reference's tag) among upstream's three.
fn image(s: &ImageVolumeSource, at: &str, v: &mut Violations) {
    required(&s.reference, &format!("{at}.reference"), v);
    one_of(
        format!("{at}.pullPolicy"),
        &s.pull_policy,
        &["Always", "IfNotPresent", "Never"],
        v,
    );
}
