//! A certificate authority made at run time (rcgen), and certificates it signs, written to a
//! temp dir as PEM files for the services' TLS flags (issue 11's TLS tests).

use std::path::PathBuf;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A CA and the directory its files live in.
pub struct Pki {
    dir: tempfile::TempDir,
    name: String,
    params: CertificateParams,
    key: KeyPair,
    /// The CA certificate (PEM).
    pub ca: PathBuf,
}

/// A certificate and key signed by a [`Pki`].
#[derive(Clone, Debug)]
pub struct Issued {
    /// Certificate (PEM).
    pub cert: PathBuf,
    /// Private key (PEM).
    pub key: PathBuf,
}

impl Pki {
    /// A new CA named `name`.
    pub fn new(name: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir for certificates");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("CA certificate");
        let ca = dir.path().join(format!("{name}-ca.crt"));
        std::fs::write(&ca, cert.pem()).expect("write CA");
        Self {
            dir,
            name: name.into(),
            params,
            key,
            ca,
        }
    }

    /// A certificate with common name `cn`, valid for `cn`, `localhost` and 127.0.0.1, for
    /// both server and client use.
    pub fn issue(&self, cn: &str) -> Issued {
        self.issue_with_groups(cn, &[])
    }

    /// [`Pki::issue`], with each of `orgs` an O of the subject (a user's groups, as the
    /// registry reads them).
    pub fn issue_with_groups(&self, cn: &str, orgs: &[&str]) -> Issued {
        let mut params = CertificateParams::new(vec![
            cn.to_string(),
            "localhost".to_string(),
            "127.0.0.1".to_string(),
        ])
        .expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        // rcgen keeps one value per attribute type: a second O goes in by its OID (2.5.4.10).
        for (i, org) in orgs.iter().enumerate() {
            let kind = if i == 0 {
                DnType::OrganizationName
            } else {
                DnType::CustomDnType(vec![2, 5, 4, 10])
            };
            params.distinguished_name.push(kind, *org);
        }
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let key = KeyPair::generate().expect("key");
        let issuer = Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).expect("sign");
        let file = cn.replace(':', "_");
        let base = self.dir.path().join(format!("{}-{file}", self.name));
        let issued = Issued {
            cert: base.with_extension("crt"),
            key: base.with_extension("key"),
        };
        std::fs::write(&issued.cert, cert.pem()).expect("write certificate");
        std::fs::write(&issued.key, key.serialize_pem()).expect("write key");
        issued
    }
}
