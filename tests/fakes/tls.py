"""A throwaway TLS certificate for loopback fakes: self-signed, valid for 127.0.0.1, usable as its own CA.

Clients that verify (the Kubernetes API stand-in's kubeconfig carries it as certificate-authority-data)
check the IP subject alternative name; clients that do not verify (Qumulo's SDK) ignore it.
"""

from __future__ import annotations

import ipaddress
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class LoopbackCertificate:
    """PEM files for a server's load_cert_chain, and the certificate's PEM for a client's trust store."""

    cert_file: str
    key_file: str
    cert_pem: bytes


@cache
def loopback_certificate(common_name: str = "hubspoke-test") -> LoopbackCertificate:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix=f"{common_name}-tls-"))
    pem = cert.public_bytes(serialization.Encoding.PEM)
    (folder / "cert.pem").write_bytes(pem)
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return LoopbackCertificate(str(folder / "cert.pem"), str(folder / "key.pem"), pem)
