"""Time budgets, logged-in Qumulo REST clients and Qumulo's own error text, shared by the runtime modules.

Runs inside the provisioning Lambda: imports nothing from hubspoke (the asset holds only this folder and the
qumulo-api SDK). Every wait inside one invocation is bounded by a Deadline derived from the Lambda's
remaining time; waits longer than that are the provider framework's is_complete polls (raise Pending).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from qumulo.lib.request import RequestError
from qumulo.rest_client import RestClient

T = TypeVar("T")

ADMIN_USER = "admin"
# One REST call never blocks longer than this, so a black-holed address cannot eat the whole budget.
MAX_REQUEST_SECONDS = 10.0


class ProvisioningError(Exception):
    """A failure CloudFormation shows as the resource's status reason; the text is what an operator needs."""


class ProvisioningTimeout(ProvisioningError):
    """A bounded wait ran out; the message says what was awaited and the last answer seen."""


class Pending(Exception):
    """Not done yet: the is_complete handler answers IsComplete false and the framework polls again."""


def poll_seconds() -> float:
    # Qumulo forms quorum and bounces it on portal changes in tens of seconds: 5 s polls are plenty.
    return float(os.environ.get("HUBSPOKE_POLL_SECONDS", "5"))


@dataclass(frozen=True)
class Deadline:
    """A point in monotonic time after which no new wait may start."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + max(0.0, seconds))

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def sooner(self, seconds: float) -> Deadline:
        """This deadline or one `seconds` from now, whichever comes first."""
        return Deadline(min(self.at, time.monotonic() + max(0.0, seconds)))

    def request_timeout(self, cap: float | None = None) -> int:
        # The SDK takes whole seconds and treats 0 as non-blocking; never below 1.
        return max(1, int(min(MAX_REQUEST_SECONDS if cap is None else cap, self.remaining())))


def describe(error: BaseException) -> str:
    """Qumulo's own error class and description when the API answered; the socket error otherwise."""
    if isinstance(error, RequestError):
        return f"Qumulo {error.status_code} {error.error_class}: {error.description}"
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


def is_answer(error: BaseException) -> bool:
    """True when the error is a reply from Qumulo (the API is up), False when the address did not answer."""
    return isinstance(error, RequestError)


def wait_until(deadline: Deadline, what: str, probe: Callable[[], T | None]) -> T:
    """Call `probe` until it returns something other than None; transport errors count as 'not yet'.

    Qumulo's own 4xx answers are final and raised at once (a wrong password does not get better by
    waiting); 5xx answers and connection errors are retried until the deadline.
    """
    started = time.monotonic()
    last = "no answer yet"
    while True:
        try:
            result = probe()
        except RequestError as error:
            if error.status_code < 500:
                raise ProvisioningError(f"{what}: {describe(error)}") from error
            last = describe(error)
        except OSError as error:
            last = describe(error)
        else:
            if result is not None:
                return result
            last = "not ready"
        if deadline.remaining() <= 0:
            waited = time.monotonic() - started
            raise ProvisioningTimeout(f"{what}: gave up after {waited:.0f} s; last answer: {last}")
        time.sleep(min(poll_seconds(), deadline.remaining()))


def anonymous_client(address: str, port: int, deadline: Deadline, *, cap: float | None = None) -> Any:
    """A client without credentials whose every request ends by the deadline, and by `cap` seconds
    (MAX_REQUEST_SECONDS unless a call is known to take longer)."""
    return RestClient(address, port, timeout=deadline.request_timeout(cap))


def login(
    addresses: Sequence[str], port: int, password: str, deadline: Deadline, *, what: str
) -> tuple[Any, str]:
    """A client logged in as admin on the first of `addresses` that answers, and that address.

    Tries each address in turn (floating IPs move between nodes) until the deadline.
    """
    if not addresses:
        raise ProvisioningError(f"{what}: no address to reach the REST API on")
    attempt = 0

    def probe() -> tuple[Any, str] | None:
        nonlocal attempt
        address = addresses[attempt % len(addresses)]
        attempt += 1
        client = anonymous_client(address, port, deadline)
        try:
            client.login(ADMIN_USER, password)
        except RequestError as error:
            if error.status_code == 401:
                raise ProvisioningError(
                    f"{what}: the cluster at {address} rejected the admin password from Secrets Manager "
                    f"({describe(error)}); if it was changed on the cluster, put the new one in the secret"
                ) from error
            raise
        return client, address

    return wait_until(deadline, f"{what}: REST API on port {port} of {', '.join(addresses)}", probe)
