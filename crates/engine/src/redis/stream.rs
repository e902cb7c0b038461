//! A Redis connection's byte transport: TCP, TLS over TCP (`rediss://`, with JuiceFS's TLS
//! options) or a Unix socket (`unix://`), dialled as go-redis dials them for
//! `newRedisMeta` (`pkg/meta/redis.go`). Which server to dial is [`super::discovery`]'s.

use crate::url::MetaUrl;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio::time::Instant;

/// TLS settings built once per engine.
#[derive(Clone)]
pub(crate) struct Tls {
    config: Arc<rustls::ClientConfig>,
    /// `tls-server-name`: the name every server's certificate is checked against; without
    /// it, the host dialled.
    server_name: Option<ServerName<'static>>,
}

/// A connection's byte stream, whichever way it was dialled.
pub(crate) enum Stream {
    /// Plain TCP.
    Tcp(TcpStream),
    /// TLS over TCP.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// A Unix socket.
    Unix(UnixStream),
}

/// TCP to `host:port`, then TLS with `tls` when given, by `deadline`. The connection
/// gets TCP_NODELAY, as Go sets it on every TCP connection.
pub(crate) async fn dial_tcp(
    tls: Option<&Tls>,
    host: &str,
    port: u16,
    deadline: Instant,
) -> io::Result<Stream> {
    let tcp = tokio::time::timeout_at(deadline, TcpStream::connect((host, port)))
        .await
        .map_err(|_| timed_out())??;
    tcp.set_nodelay(true)?;
    let Some(tls) = tls else {
        return Ok(Stream::Tcp(tcp));
    };
    let name = match &tls.server_name {
        Some(n) => n.clone(),
        None => ServerName::try_from(host.to_owned()).map_err(|_| {
            io::Error::other(format!("'{host}' is not a server name TLS can check"))
        })?,
    };
    let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
    match tokio::time::timeout_at(deadline, connector.connect(name, tcp)).await {
        Ok(Ok(s)) => Ok(Stream::Tls(Box::new(s))),
        Ok(Err(e)) => Err(io::Error::other(format!("TLS handshake failed: {e}"))),
        // A server that does not speak TLS on this port never answers the hello.
        Err(_) => Err(io::Error::other(
            "TLS handshake timed out (does the server speak TLS on this port?)",
        )),
    }
}

/// A Unix socket at `path`, by `deadline`.
pub(crate) async fn dial_unix(path: &Path, deadline: Instant) -> io::Result<Stream> {
    tokio::time::timeout_at(deadline, UnixStream::connect(path))
        .await
        .map_err(|_| timed_out())?
        .map(Stream::Unix)
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "connect timed out")
}

impl Tls {
    /// The TLS settings of a `rediss://` URL: the CA file, or the system's roots; a client
    /// certificate; the server name to check; or no check at all with
    /// `insecure-skip-verify`.
    pub(crate) fn from_url(url: &MetaUrl) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        // newRedisMeta: InsecureSkipVerify = (the option's value != ""), so a bare
        // `?insecure-skip-verify` still checks, and any value (even `false`) skips.
        let builder = if url
            .param("insecure-skip-verify")
            .is_some_and(|v| !v.is_empty())
        {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
        } else {
            let mut roots = rustls::RootCertStore::empty();
            match url.param("tls-ca-cert-file") {
                Some(file) => {
                    let certs = certificates("tls-ca-cert-file", file)?;
                    let (added, _) = roots.add_parsable_certificates(certs);
                    if added == 0 {
                        return Err(format!("tls-ca-cert-file {file} holds no certificate"));
                    }
                }
                None => {
                    // As Go's crypto/tls without RootCAs: the system's trusted roots.
                    let found = rustls_native_certs::load_native_certs();
                    roots.add_parsable_certificates(found.certs);
                }
            }
            builder.with_root_certificates(roots)
        };
        let config = match (url.param("tls-cert-file"), url.param("tls-key-file")) {
            (Some(cert), Some(key)) => {
                let chain = certificates("tls-cert-file", cert)?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| format!("cannot read tls-key-file {key}: {e}"))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("bad client certificate or key: {e}"))?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => return Err("tls-cert-file and tls-key-file go together".into()),
        };
        // Go checks the certificate against the dialled host unless tls-server-name is set.
        let server_name = match url.param("tls-server-name") {
            Some(name) => Some(
                ServerName::try_from(name.to_owned())
                    .map_err(|_| format!("'{name}' is not a server name TLS can check"))?,
            ),
            None => None,
        };
        Ok(Tls {
            config: Arc::new(config),
            server_name,
        })
    }
}

/// The PEM certificates of `file`, which the URL's `option` names.
fn certificates(option: &str, file: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    CertificateDer::pem_file_iter(file)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read {option} {file}: {e}"))
}

/// `insecure-skip-verify`: any server certificate is taken (Go's InsecureSkipVerify); the
/// handshake's signatures are still checked.
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
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
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
