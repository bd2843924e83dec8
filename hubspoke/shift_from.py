"""What a Shift-From load is given and reports: the S3 folder, the Shift user's access keys, a job's progress.

Stdlib-only but for boto3's errors (imported where used): the training image holds it (workload/Dockerfile) for
the load Job, beside hubspoke/dataset_load.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
_SOURCE = re.compile(r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/(.*))?$")


class LoadError(Exception):
    """A load that cannot go on: one line saying why and what to do; `code` is the exit status."""

    def __init__(self, message: str, *, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Source:
    """An S3 folder: its bucket and the key prefix (a folder, "" for the bucket's root)."""

    bucket: str
    folder: str

    @classmethod
    def parse(cls, text: str) -> Source:
        match = _SOURCE.match(text)
        if match is None:
            raise LoadError(
                f"--source {text!r} is not an S3 folder; write it like s3://my-bucket/c4/tokenized/",
                code=EXIT_BAD_INPUT,
            )
        folder = (match.group(2) or "").strip("/")
        # Shift-From fails a job on keys with '//', '.' or '..' parts (guide, "Restrictions"): a folder like
        # that could never load, so it is refused before anything is created.
        if "//" in (match.group(2) or "") or any(p in (".", "..") for p in folder.split("/") if folder):
            raise LoadError(f"--source {text!r}: no '//', '.' or '..' in the folder", code=EXIT_BAD_INPUT)
        return cls(match.group(1), folder + "/" if folder else "")

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.folder}"


@dataclass(frozen=True)
class ShiftKeys:
    """The access key Shift-From uses: the guide requires an access key ID and secret (no role, no anonymous)."""

    access_key_id: str
    secret_access_key: str


class KeySource(Protocol):
    """Where a load gets the Shift user's access key, and returns it once the load no longer needs it."""

    def create(self) -> ShiftKeys: ...

    def delete(self, access_key_id: str) -> None: ...


class IamKeys:
    """Access keys of the hub stack's Shift user (hubspoke/constructs/shift.py), one per load, through IAM."""

    def __init__(self, iam: Any, user_name: str):
        self.iam, self.user_name = iam, user_name

    def create(self) -> ShiftKeys:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            key = self.iam.create_access_key(UserName=self.user_name)["AccessKey"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "LimitExceeded":
                # IAM allows two access keys per user (IAM User Guide, "IAM and AWS STS quotas").
                raise LoadError(
                    f"IAM user {self.user_name} has two access keys already (IAM's limit), one per load in "
                    "progress: finish one of those loads, or delete a key no relationship uses"
                ) from None
            raise LoadError(f"cannot create an access key for IAM user {self.user_name}: {exc}") from None
        except BotoCoreError as exc:
            raise LoadError(f"cannot create an access key for IAM user {self.user_name}: {exc}") from None
        return ShiftKeys(key["AccessKeyId"], key["SecretAccessKey"])

    def delete(self, access_key_id: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.iam.delete_access_key(UserName=self.user_name, AccessKeyId=access_key_id)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "NoSuchEntity":
                raise LoadError(
                    f"the load is done but access key {access_key_id} of {self.user_name} could not be deleted "
                    f"({exc}); delete it with the IAM console or CLI"
                ) from None
        except BotoCoreError as exc:
            raise LoadError(
                f"could not delete access key {access_key_id}: {exc}; delete it yourself"
            ) from None


@dataclass(frozen=True)
class Progress:
    """One status read of a running job, as the guide's `job_progress` reports it."""

    bytes_done: int
    bytes_total: int
    files_done: int
    files_total: int
    percent: float | None

    @classmethod
    def of(cls, job: dict[str, Any]) -> Progress:
        p = job.get("job_progress") or {}

        def number(key: str) -> int:
            try:
                return int(p.get(key) or 0)
            except (TypeError, ValueError):
                return 0

        try:
            percent: float | None = float(p["percent_complete"])
        except (KeyError, TypeError, ValueError):
            # The guide: "None" until the listing that estimates the work is done.
            percent = None
        return cls(
            bytes_done=number("bytes_transferred") + number("bytes_unchanged"),
            bytes_total=number("bytes_total"),
            files_done=number("files_transferred") + number("files_unchanged"),
            files_total=number("files_total"),
            percent=percent,
        )

    def line(self) -> str:
        if self.percent is None:
            return f"estimating the work (listing the source); {self.files_done} files copied so far"
        return (
            f"{self.percent:5.1f} %  {self.bytes_done / 1e9:.2f} of {self.bytes_total / 1e9:.2f} GB, "
            f"{self.files_done} of {self.files_total} files"
        )


def job_error(status: dict[str, Any]) -> str | None:
    last = status.get("last_job")
    if isinstance(last, dict) and last.get("error"):
        return str(last["error"])
    return None
