"""tests/conftest.py makes moto's KMS private keys on first use: what reads them still works as KMS documents."""

from __future__ import annotations

import boto3
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from moto import mock_aws


def test_a_deferred_key_still_signs_and_its_public_key_verifies_the_signature() -> None:
    """AWS KMS API Reference, Sign and GetPublicKey: an RSA_2048 SIGN_VERIFY key signs with
    RSASSA_PKCS1_V1_5_SHA_256 (PKCS #1 v1.5 padding, SHA-256) and GetPublicKey returns its DER-encoded
    SubjectPublicKeyInfo; the signature is checked here with that public key through cryptography, not moto."""
    message = b"hubspoke"
    with mock_aws():
        kms = boto3.client("kms", region_name="us-east-2")
        kms.create_key()  # a symmetric key nobody signs with: its private key is never made
        key = kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
        signature = kms.sign(KeyId=key, Message=message, SigningAlgorithm="RSASSA_PKCS1_V1_5_SHA_256")[
            "Signature"
        ]
        public = serialization.load_der_public_key(kms.get_public_key(KeyId=key)["PublicKey"])
    assert isinstance(public, rsa.RSAPublicKey) and public.key_size == 2048
    public.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
