//! TLS for `rediss://` URLs: a rustls client configuration built from the builder's options
//! (trusted CA, client certificate, or no verification for tests).

use std::sync::Arc;

use fred::types::config::{TlsConfig, TlsConnector, TlsHostMapping};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::error::{Error, Result};

/// TLS options for `rediss://` URLs. Its `Debug` never shows the key.
#[derive(Clone, Default)]
pub(crate) struct TlsSettings {
    /// PEM certificates to trust instead of the system's roots.
    pub(crate) ca_pem: Option<Vec<u8>>,
    /// PEM certificate chain and private key to present (mutual TLS).
    pub(crate) client: Option<(Vec<u8>, Vec<u8>)>,
    /// Accept any server certificate (tests only).
    pub(crate) insecure: bool,
}

impl TlsSettings {
    pub(crate) fn is_set(&self) -> bool {
        self.ca_pem.is_some() || self.client.is_some() || self.insecure
    }
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("custom_ca", &self.ca_pem.is_some())
            .field("client_cert", &self.client.is_some())
            .field("insecure_skip_verify", &self.insecure)
            .finish()
    }
}

/// fred's TLS configuration for `settings`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the option whose PEM text holds no usable certificate or
/// key.
pub(crate) fn config(settings: &TlsSettings) -> Result<TlsConfig> {
    // The ring provider explicitly: no process-wide default provider needs to be installed.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::invalid("tls", e.to_string()))?;
    let builder = if settings.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        match &settings.ca_pem {
            Some(pem) => {
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert = cert.map_err(|e| {
                        Error::invalid("tls_ca_pem", format!("not a PEM certificate: {e}"))
                    })?;
                    roots.add(cert).map_err(|e| {
                        Error::invalid("tls_ca_pem", format!("unusable CA certificate: {e}"))
                    })?;
                }
                if roots.is_empty() {
                    return Err(Error::invalid(
                        "tls_ca_pem",
                        "no `-----BEGIN CERTIFICATE-----` block found",
                    ));
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                for cert in found.certs {
                    let _ = roots.add(cert);
                }
            }
        }
        builder.with_root_certificates(roots)
    };
    let config = match &settings.client {
        None => builder.with_no_client_auth(),
        Some((chain, key)) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain)
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| {
                    Error::invalid("tls_client_cert_pem", format!("certificate chain: {e}"))
                })?;
            if certs.is_empty() {
                return Err(Error::invalid(
                    "tls_client_cert_pem",
                    "no `-----BEGIN CERTIFICATE-----` block in the certificate chain",
                ));
            }
            let key = PrivateKeyDer::from_pem_slice(key)
                .map_err(|e| Error::invalid("tls_client_cert_pem", format!("private key: {e}")))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| Error::invalid("tls_client_cert_pem", e.to_string()))?
        }
    };
    Ok(TlsConfig {
        connector: TlsConnector::from(config),
        hostnames: TlsHostMapping::DefaultHost,
    })
}

/// `tls_insecure_skip_verify`: any certificate is accepted; signatures are still checked, so
/// the session is encrypted, but not authenticated.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
