"""Least-privilege Qumulo identities (a role and a local user per purpose), converged from any state by the admin.

Roles hold privileges and users hold roles ("Managing Role-Based Access Control (RBAC)", Qumulo/docs@2e866167;
REST guide /v1/auth/roles, /v1/users, /v1/auth/roles/{role}/members); each step reads first and changes only
what differs, membership checked by logging in as the user (/v1/session/roles). File access is the ACL's
unless PRIVILEGE_FILE_FULL_ACCESS / PRIVILEGE_FILE_READ_ACCESS, so a writer gets one inheritable ACE on its
own directory (/v2/files/{ref}/info/acl) beside a read-only ACE for Everyone, so pods read what it writes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from qumulo.lib.identity_util import EVERYONE_ID
from qumulo.lib.request import RequestError

from .session import ProvisioningError, anonymous_client, describe

log = logging.getLogger(__name__)

# qq auth_add_user's --primary-group "default is Users" (qumulo-api 7.10.2.1, qumulo/commands/auth.py).
PRIMARY_GROUP = "Users"
# ACE flags that make an ACE reach every file and directory created below (REST guide, files ACL v2 schema).
INHERIT = ("OBJECT_INHERIT", "CONTAINER_INHERIT")
# Everything a writer of its own tree needs (create, write, rename, delete, and the ACL a seal makes read-only),
# but not ownership changes (REST guide, files ACL v2 schema: the rights enum).
WRITER_RIGHTS = (
    "READ", "READ_EA", "READ_ATTR", "READ_ACL", "WRITE_EA", "WRITE_ATTR", "WRITE_ACL", "DELETE", "EXECUTE",
    "MODIFY", "EXTEND", "ADD_FILE", "ADD_SUBDIR", "DELETE_CHILD", "SYNCHRONIZE",
)  # fmt: skip

# Reading and traversing, nothing that changes a file: POSIX_READ_RIGHTS plus EXECUTE and SYNCHRONIZE
# (qumulo-api 7.10.2.1, qumulo/commands/fs.py: ALL_RIGHTS, POSIX_READ_RIGHTS; "Execute/Traverse").
READER_RIGHTS = ("READ", "READ_ATTR", "READ_EA", "READ_ACL", "EXECUTE", "SYNCHRONIZE")
# The Everyone trustee (qumulo/lib/identity_util.py: EVERYONE_ID, WORLD_DOMAIN).
EVERYONE = {"domain": "WORLD", "auth_id": EVERYONE_ID}


@dataclass(frozen=True)
class IdentitySpec:
    """One purpose's identity: its role (privileges) and user, and the directory it may write, if any."""

    role: str
    username: str
    privileges: tuple[str, ...]
    write_path: str | None = None


def credentials(secret: str) -> tuple[str, str]:
    """(username, password) from the identity's secret: JSON {"username", "password"} (the stack's template)."""
    try:
        value = json.loads(secret)
        return str(value["username"]), str(value["password"])
    except (ValueError, KeyError, TypeError):
        raise ProvisioningError(
            'the identity secret is not JSON {"username": ..., "password": ...}'
        ) from None


def check_privileges(client: Any, spec: IdentitySpec) -> None:
    """Refuse in one line when the cluster does not offer a privilege the role needs, rather than a 4xx later.

    GET /v1/auth/privileges/ (qumulo-api 7.10.2.1, qumulo.rest.roles.list_privileges) lists what this cluster's
    version offers, each {"name", "description"}; the privilege enum grows across versions (REST guide)."""
    offered = {str(p.get("name")) for p in client.roles.list_privileges() or []}
    missing = sorted(set(spec.privileges) - offered)
    if missing:
        raise ProvisioningError(
            f"role {spec.role}: this cluster does not offer {', '.join(missing)}; upgrade Qumulo Core to a version "
            "that lists them in GET /v1/auth/privileges/"
        )


def ensure_role(client: Any, spec: IdentitySpec) -> None:
    """The role exists and holds exactly spec.privileges (GET, then POST or PATCH /v1/auth/roles/)."""
    check_privileges(client, spec)
    wanted = sorted(spec.privileges)
    try:
        role = client.roles.list_role(spec.role)
    except RequestError as error:
        if error.status_code != 404:
            raise
        client.roles.create_role(spec.role, f"hubspoke: {spec.username}", wanted)
        return
    if sorted(role.get("privileges") or []) != wanted:
        client.roles.modify_role(spec.role, privileges=wanted)


def _group_id(client: Any) -> str:
    for group in client.groups.list_groups():
        if group.get("name") == PRIMARY_GROUP:
            return str(group["id"])
    raise ProvisioningError(
        f"the cluster has no local group {PRIMARY_GROUP!r} to make the user's primary group"
    )


def ensure_user(client: Any, spec: IdentitySpec, password: str) -> str:
    """The local user exists with `password` (POST /v1/users/ or /setpassword); its user id."""
    existing = next((u for u in client.users.list_users() if u.get("name") == spec.username), None)
    if existing is None:
        created = client.users.add_user(spec.username, _group_id(client), password)
        return str(created["id"])
    # Always set: the secret is the source of truth, and Qumulo cannot say whether a password matches it.
    client.users.set_user_password(existing["id"], password)
    return str(existing["id"])


def ensure_member(client: Any, spec: IdentitySpec, user_client: Any) -> None:
    """The user holds the role: /v1/session/roles as the user, POST .../members as admin if it does not."""
    if spec.role in (user_client.auth.my_roles() or []):
        return
    client.roles.add_member(spec.role, name=spec.username)


def _granted(acl: dict[str, Any], trustee: dict[str, Any], rights: Sequence[str]) -> bool:
    """Whether the ACL has an inheritable ALLOWED ACE giving `trustee` at least `rights`."""
    return any(
        ace.get("type") == "ALLOWED"
        and str((ace.get("trustee") or {}).get("auth_id")) == str(trustee["auth_id"])
        and set(rights) <= set(ace.get("rights") or [])
        and set(INHERIT) <= set(ace.get("flags") or [])
        for ace in acl.get("aces") or []
    )


def _ensure_aces(client: Any, path: str, wanted: Sequence[tuple[dict[str, Any], Sequence[str]]]) -> None:
    """Each (trustee, rights) as an inheritable ALLOWED ACE on path: GET the v2 ACL, PUT it only if one is missing."""
    acl = client.fs.get_acl_v2(path=path)
    missing = [
        {"type": "ALLOWED", "flags": list(INHERIT), "trustee": dict(trustee), "rights": list(rights)}
        for trustee, rights in wanted
        if not _granted(acl, trustee, rights)
    ]
    if missing:
        client.fs.set_acl_v2({**acl, "aces": [*(acl.get("aces") or []), *missing]}, path=path)


def ensure_write_access(client: Any, spec: IdentitySpec) -> None:
    """Inheritable ACEs on spec.write_path: the user's WRITER_RIGHTS and Everyone's READER_RIGHTS; the same on each
    directory already directly under it (a dataset name made before this ACE existed inherits nothing later).

    Shift-From's files need inheritable permissions on the root before the relationship is created ("Using
    Qumulo Shift-From to Copy Objects from Amazon S3", "Best Practices", Qumulo/docs@0765db6d); an ACL set
    here replaces inheritance, so Everyone's read is set with it, or pods reading as their UID are refused.
    Existing children are converged one level down; deeper entries are sealed versions, made with these ACEs.
    """
    if spec.write_path is None:
        return
    identity = client.auth.find_identity(name=spec.username)
    wanted = [(identity, WRITER_RIGHTS), (EVERYONE, READER_RIGHTS)]
    _ensure_aces(client, spec.write_path, wanted)
    # SDK qumulo.rest.fs.enumerate_entire_directory: every entry, following the pages.
    for child in client.fs.enumerate_entire_directory(path=spec.write_path.rstrip("/") + "/"):
        if child.get("type") == "FS_FILE_TYPE_DIRECTORY":
            _ensure_aces(client, str(child["path"]), wanted)


def user_login(addresses: Sequence[str], port: int, username: str, password: str, deadline: Any) -> Any:
    """A client logged in as the identity, on the first address that answers (its login proves the password)."""
    last: BaseException | None = None
    for address in addresses:
        client = anonymous_client(address, port, deadline)
        try:
            client.login(username, password)
            return client
        except OSError as error:
            last = error
    raise ProvisioningError(f"{username}: no node answered the login: {describe(last or OSError())}")


def ensure_identity(
    client: Any, spec: IdentitySpec, password: str, *, addresses: Sequence[str], port: int, deadline: Any
) -> None:
    """Role, user, password, membership and write access of one identity, each converged (see the module)."""
    ensure_role(client, spec)
    ensure_user(client, spec, password)
    ensure_member(client, spec, user_login(addresses, port, spec.username, password, deadline))
    ensure_write_access(client, spec)
    log.info("identity %s (role %s) converged", spec.username, spec.role)


def remove_identity(client: Any, spec: IdentitySpec) -> None:
    """The user, then the role, if they exist (DELETE /v1/users/{id}, /v1/auth/roles/{role})."""
    for user in client.users.list_users():
        if user.get("name") == spec.username:
            client.users.delete_user(user["id"])
    try:
        client.roles.delete_role(spec.role)
    except RequestError as error:
        if error.status_code != 404:
            raise
