"""The dataset load Job's program: Shift-From into a new hub version, hashed through the dataset mount, sealed.

Runs in the hub Region's cluster (hubspoke/k8s/load.py renders the Job; `hubspoke dataset load` starts it), next
to the hub's CNQ: the REST API (port 8000) answers only inside the hub VPC. The AWS calls (the Qumulo login
secret, the Shift user's access keys) run as the Job's service account through EKS Pod Identity (Amazon EKS API
Reference, CreatePodIdentityAssociation: "Amazon EKS sets environment variables in the containers of the pod"
that the AWS SDKs read: botocore/credentials.py ContainerProvider, AWS_CONTAINER_CREDENTIALS_FULL_URI and
AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE, in the boto3 workload/requirements.txt pins). The work itself is
hubspoke.dataset_load.HubLoad, which the tests run too.

Exit 0 when the version is sealed, 1 when the load failed and running it again resumes, 2 for a refusal no
retry can fix (the Job's podFailurePolicy fails the Job at once on 2), 143 when stopped by SIGTERM.

Deleting or evicting the pod sends SIGTERM, then SIGKILL after the grace period (Kubernetes docs, "Pod
Lifecycle", "Termination of Pods"); Python's default for SIGTERM ends the process without unwinding, so it is
turned into KeyboardInterrupt: the load's undo (a new IAM access key, of two per user, and the empty version
directory) runs as for Ctrl-C. A SIGKILL still leaves them; the next run takes over the empty directory.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from hubspoke.dataset_load import DEFAULT_HASH_WORKERS, HubLoad
from hubspoke.dataset_manifest import ManifestError
from hubspoke.shift_from import EXIT_BAD_INPUT, IamKeys, KeySource, LoadError, Source

# Where the Qumulo Core REST API listens (qumulo-api 7.10.2.1, qumulo/rest_client.py: RestClient's `port`,
# "typically 8000"; hubspoke/ports.py QUMULO_REST holds the same fact for the stacks).
REST_PORT = 8000
# The CNQ admin secret is a bare generated password (hubspoke/constructs/cnq/infrastructure.py, no JSON template),
# for Qumulo's built-in admin user.
ADMIN_USER = "admin"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--rest-address", required=True, metavar="ADDRESS[:PORT]", help="the hub CNQ's REST API")
    p.add_argument("--dataset-path", required=True, help="the hub's storage.dataset_path")
    p.add_argument("--mount", required=True, help="where dataset_path is mounted in this container")
    p.add_argument("--name", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--source", required=True, help="s3://bucket/folder/")
    p.add_argument("--bucket-region", required=True)
    p.add_argument("--token-bytes", required=True, type=int, choices=(2, 4))
    p.add_argument("--vocab-size", required=True, type=int)
    p.add_argument("--shift-user", required=True, help="the IAM user Shift-From reads the bucket as")
    p.add_argument(
        "--secret-arn", required=True, help="the Qumulo login: JSON {username, password} or a bare password"
    )
    p.add_argument("--poll-seconds", type=float, default=30.0)
    p.add_argument("--hash-workers", type=int, default=DEFAULT_HASH_WORKERS)
    return p


def credentials(secret: str) -> tuple[str, str]:
    """(username, password) from the secret: a JSON object with both, or the admin secret's bare password."""
    try:
        value = json.loads(secret)
    except ValueError:
        return ADMIN_USER, secret
    if (
        isinstance(value, dict)
        and isinstance(value.get("username"), str)
        and isinstance(value.get("password"), str)
    ):
        return value["username"], value["password"]
    if isinstance(value, str):
        return ADMIN_USER, value
    raise LoadError(
        'the login secret is JSON but not {"username": ..., "password": ...}', code=EXIT_BAD_INPUT
    )


def aws_connect(args: argparse.Namespace) -> tuple[str, KeySource]:
    """The login secret's value and the Shift user's key source, through boto3 (the pod's identity)."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        secret = boto3.client("secretsmanager").get_secret_value(SecretId=args.secret_arn)["SecretString"]
    except (BotoCoreError, ClientError) as exc:
        raise LoadError(f"cannot read the Qumulo login secret {args.secret_arn}: {exc}") from None
    return str(secret), IamKeys(boto3.client("iam"), args.shift_user)


def rest_login(address: str, username: str, password: str) -> Any:
    from qumulo.lib.request import RequestError
    from qumulo.rest_client import RestClient

    host, _, port = address.partition(":")
    try:
        client = RestClient(host, int(port or REST_PORT), timeout=60)
        client.login(username, password)
    except (RequestError, OSError, ValueError) as exc:
        raise LoadError(f"cannot log in to the hub's REST API at {address} as {username}: {exc}") from None
    return client


# 128 + SIGTERM's number: what a shell reports for a process SIGTERM ended (signal(7): SIGTERM is 15).
EXIT_TERMINATED = 128 + signal.SIGTERM


def _terminated(signum: int, frame: Any) -> None:
    """SIGTERM as Ctrl-C, once: a second SIGTERM must not interrupt the undo the first one started."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt(f"signal {signum}")


def main(
    argv: Sequence[str] | None = None,
    *,
    connect: Callable[[argparse.Namespace], tuple[str, KeySource]] = aws_connect,
    sleep: Callable[[float], None] | None = None,
) -> int:
    args = parser().parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        source = Source.parse(args.source)
        secret, keys = connect(args)
        username, password = credentials(secret)
        client = rest_login(args.rest_address, username, password)
        HubLoad(
            client,
            dataset_path=args.dataset_path,
            name=args.name,
            version=args.version,
            source=source,
            bucket_region=args.bucket_region,
            token_bytes=args.token_bytes,
            vocab_size=args.vocab_size,
            keys=keys,
            mount=args.mount,
            out=sys.stdout,
            poll_seconds=args.poll_seconds,
            hash_workers=args.hash_workers,
            **({} if sleep is None else {"sleep": sleep}),
        ).run()
    except LoadError as exc:
        print(f"load: {exc}", file=sys.stderr, flush=True)
        return exc.code
    except ManifestError as exc:
        print(f"load: {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("load: stopped by SIGTERM or Ctrl-C; run the same command again to resume",
              file=sys.stderr, flush=True)  # fmt: skip
        return EXIT_TERMINATED
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
