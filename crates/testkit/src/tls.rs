//! Test certificates: a private certificate authority, a server certificate it signed for
//! 127.0.0.1 and `localhost`, a client certificate it signed, and an unrelated authority
//! (for "wrong CA" tests), written as PEM files to a temporary directory.

use crate::util::temp_dir;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use std::path::PathBuf;

/// PEM files of a private certificate authority and what it signed; removed on drop.
pub struct TestCerts {
    dir: tempfile::TempDir,
}

fn authority(name: &str) -> (CertificateParams, KeyPair, String) {
    let key = KeyPair::generate().expect("generate a CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let pem = params.self_signed(&key).expect("self-sign the CA").pem();
    (params, key, pem)
}

impl TestCerts {
    /// Generates the authorities and certificates.
    pub fn generate() -> TestCerts {
        let dir = temp_dir();
        let write = |name: &str, pem: &str| std::fs::write(dir.path().join(name), pem).unwrap();
        let (ca_params, ca_key, ca_pem) = authority("metabench test CA");
        write("ca.pem", &ca_pem);
        let (_, _, other_pem) = authority("an unrelated CA");
        write("other-ca.pem", &other_pem);
        let issuer = Issuer::new(ca_params, ca_key);
        for (name, sans) in [
            (
                "server",
                vec!["127.0.0.1".to_owned(), "localhost".to_owned()],
            ),
            ("client", vec!["metabench-client".to_owned()]),
        ] {
            let key = KeyPair::generate().expect("generate a key");
            let mut params = CertificateParams::new(sans).expect("parameters");
            params.distinguished_name.push(DnType::CommonName, name);
            let cert = params.signed_by(&key, &issuer).expect("sign");
            write(&format!("{name}.pem"), &cert.pem());
            write(&format!("{name}-key.pem"), &key.serialize_pem());
        }
        TestCerts { dir }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The authority's certificate.
    pub fn ca(&self) -> PathBuf {
        self.file("ca.pem")
    }

    /// An authority that signed nothing here.
    pub fn other_ca(&self) -> PathBuf {
        self.file("other-ca.pem")
    }

    /// The server's certificate (for 127.0.0.1 and `localhost`) and key.
    pub fn server(&self) -> (PathBuf, PathBuf) {
        (self.file("server.pem"), self.file("server-key.pem"))
    }

    /// A client certificate and key the authority signed.
    pub fn client(&self) -> (PathBuf, PathBuf) {
        (self.file("client.pem"), self.file("client-key.pem"))
    }
}
