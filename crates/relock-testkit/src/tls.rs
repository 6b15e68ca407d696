//! Certificates for TLS test servers, made in-process with `rcgen` (no `openssl` binary needed).

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

use crate::{Error, Result};

/// A certificate authority and what it signed for one test server: PEM text, ready for
/// redis-server's `--tls-*-file` options and for a client's trust store.
#[derive(Debug, Clone)]
pub struct TlsMaterial {
    /// The CA's certificate (what a client must trust).
    pub ca_cert_pem: String,
    /// The server's certificate, for `localhost` and `127.0.0.1`, signed by the CA.
    pub server_cert_pem: String,
    /// The server's private key.
    pub server_key_pem: String,
    /// A client certificate signed by the same CA (for mutual TLS).
    pub client_cert_pem: String,
    /// The client certificate's private key.
    pub client_key_pem: String,
}

impl TlsMaterial {
    /// A fresh CA, a server certificate and a client certificate.
    ///
    /// # Errors
    /// [`Error::Io`] if rcgen fails (it should not).
    pub fn generate() -> Result<Self> {
        let ca_key = KeyPair::generate().map_err(tls_error)?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(tls_error)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "relock test CA");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).map_err(tls_error)?;
        let issuer = Issuer::new(ca_params, ca_key);
        let leaf = |names: Vec<String>, cn: &str| -> Result<(String, String)> {
            let key = KeyPair::generate().map_err(tls_error)?;
            let mut params = CertificateParams::new(names).map_err(tls_error)?;
            params.distinguished_name.push(DnType::CommonName, cn);
            let cert = params.signed_by(&key, &issuer).map_err(tls_error)?;
            Ok((cert.pem(), key.serialize_pem()))
        };
        let (server_cert_pem, server_key_pem) = leaf(
            vec!["localhost".into(), "127.0.0.1".into()],
            "relock test server",
        )?;
        let (client_cert_pem, client_key_pem) = leaf(Vec::new(), "relock test client")?;
        Ok(TlsMaterial {
            ca_cert_pem: ca_cert.pem(),
            server_cert_pem,
            server_key_pem,
            client_cert_pem,
            client_key_pem,
        })
    }
}

fn tls_error(e: rcgen::Error) -> Error {
    Error::Io {
        what: "generating test certificates".into(),
        source: std::io::Error::other(e.to_string()),
    }
}
