//! https on loopback: a test certificate authority, made afresh by each test
//! (rcgen: nothing to check in, nothing that expires), and a TLS front that
//! ends TLS for a plain loopback [`SiteServer`](forager_bench::sites::server::SiteServer),
//! so that every site of the harness can be served over https too, and a
//! job trusts the CA through `[http] ca_file`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A certificate authority that signs certificates for test host names.
pub struct TestCa {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl TestCa {
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("self-signed CA");
        TestCa { cert, key }
    }

    /// The CA's certificate as PEM, written to `dir/NAME` (a job's `ca_file`).
    pub fn write_pem(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, self.cert.pem()).expect("write the CA's PEM");
        path
    }

    /// A server configuration whose certificate, signed by this CA, names `hosts`.
    pub fn server_config(&self, hosts: &[&str]) -> Arc<rustls::ServerConfig> {
        let names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("leaf params");
        params
            .distinguished_name
            .push(DnType::CommonName, hosts.first().copied().unwrap_or("test"));
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().expect("leaf key");
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("leaf signed by the CA");
        let chain: Vec<CertificateDer<'static>> = vec![cert.der().clone()];
        let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(chain, private)
            .expect("server certificate");
        Arc::new(config)
    }
}

/// Ends TLS on a loopback port and passes the bytes to a plain server's
/// port: the https origin of that server. Stops when dropped.
pub struct TlsFront {
    addr: SocketAddr,
    /// When each connection reached the front (handshakes tried).
    connections: Arc<Mutex<Vec<Instant>>>,
    task: tokio::task::JoinHandle<()>,
}

impl TlsFront {
    /// Serve TLS with `config` in front of 127.0.0.1:`backend`.
    pub async fn start(config: Arc<rustls::ServerConfig>, backend: u16) -> TlsFront {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind the TLS front");
        let addr = listener.local_addr().expect("the front's address");
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let connections = Arc::new(Mutex::new(Vec::new()));
        let seen = connections.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                seen.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(Instant::now());
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A failed handshake (the client distrusts the
                    // certificate) ends the connection: that is the test.
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut plain) =
                        tokio::net::TcpStream::connect(("127.0.0.1", backend)).await
                    else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        TlsFront {
            addr,
            connections,
            task,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// When each connection reached the front, in order.
    pub fn connections(&self) -> Vec<Instant> {
        self.connections
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}
