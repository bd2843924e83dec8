"""A throwaway self-signed certificate for loopback fakes whose clients verify it (client-go, botocore).

The certificate names 127.0.0.1 as an IP subject alternative name: Go's TLS client checks the server's
address against the SANs only (crypto/x509 Certificate.VerifyHostname), so a CN-only certificate is refused.
"""

from __future__ import annotations

import ipaddress
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class SelfSigned:
    """A certificate (its own CA) and key as PEM files, and the certificate's PEM bytes."""

    cert_file: Path
    key_file: Path
    cert_pem: bytes


# One directory per test process, removed when the process ends (weakref finalizer of TemporaryDirectory).
_FOLDER = tempfile.TemporaryDirectory(prefix="hubspoke-fake-tls-")


def self_signed(common_name: str, address: str = "127.0.0.1", dns_name: str = "") -> SelfSigned:
    """A CA certificate for `address` (or, given, for the host name `dns_name` only), valid for a week, written
    to a fresh temporary directory."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.now(UTC)
    san = x509.DNSName(dns_name) if dns_name else x509.IPAddress(ipaddress.ip_address(address))
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName([san]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix=f"{common_name}-tls-", dir=_FOLDER.name))
    pem = cert.public_bytes(serialization.Encoding.PEM)
    (folder / "cert.pem").write_bytes(pem)
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return SelfSigned(folder / "cert.pem", folder / "key.pem", pem)


@cache
def loopback_certificate(common_name: str) -> SelfSigned:
    """One certificate per name for the whole test session: a server and the clients that trust it share it."""
    return self_signed(common_name)


@cache
def named_certificate(dns_name: str) -> SelfSigned:
    """A certificate for a host name only, served on loopback: what a client reaching a server through a
    tunnel (a local address) sees, as the EKS endpoint's certificate names the endpoint's host, not localhost."""
    return self_signed("fake-tunnelled-apiserver", dns_name=dns_name)
