"""Local users, roles and file ACLs of the Qumulo contract fake, and the refusals of an identity lacking a right.

Shapes follow the SDK (qumulo-api 7.10.2.1: qumulo.rest.users, roles, groups, auth.find_identity/my_roles,
fs.get_acl_v2/set_acl_v2) and Qumulo's REST API guide (/v1/users, /v1/auth/roles, /v1/session/roles: "all the
roles assigned to the current user"; the v2 ACL schema). Behaviour from "Managing Role-Based Access Control
(RBAC)" (Qumulo/docs@2e866167): privileges come through roles, and "for changes to take effect, a user account
with newly assigned roles must log out ... and then log back in": a session keeps the privileges it logged in
with. Which privilege a route needs is from the page that names it (ROUTE_PRIVILEGES); files need the ACL's
rights (the file's own ACL: a new file or directory gets a copy of its parent's inheritable ACEs when it is
created, flagged INHERITED, as Qumulo's ACL model does: "Container inherit"/"Object inherit" are NFSv4's d/f
flags, "Managing NFSv4.1 ACLs", Qumulo/docs@0765db6d; the SDK's INHERITED flag, qumulo/commands/fs.py) unless the session holds PRIVILEGE_FILE_FULL_ACCESS / PRIVILEGE_FILE_READ_ACCESS ("access to all files
regardless of permissions", REST guide /v1/auth/roles), and Shift-From needs none ("regardless of file and
directory permissions", same page, PRIVILEGE_REPLICATION_OBJECT_WRITE).

ASSUMED: a refusal is 403 (the status qumulo/commands/login.py WhoAmICommand expects from a user lacking a
right) with class `privilege_error` / `fs_access_denied_error`; the built-in group and user ids; that a file
without ACEs set through the API grants a non-admin nothing; that routes not in ROUTE_PRIVILEGES (cluster,
network, NFS, portal, capacity) are the admin's only, as the fake does not model their privileges.
"""

from __future__ import annotations

import re
import threading
from typing import Any
from urllib.parse import unquote

from tests.fakes.qumulo.server import QumuloFault, Reply

ADMIN = "admin"
# The REST guide's privilege enum (/v1/auth/roles, role_model.privileges); a role naming another is refused.
_PRIVILEGE_NAMES = """ACCESS_TOKENS_READ ACCESS_TOKENS_WRITE AD_READ AD_USE AD_WRITE AUDIT_READ AUDIT_WRITE
    AUTH_CACHE_READ AUTH_CACHE_WRITE CAPACITY_READ CAPACITY_WRITE CHECKSUMMING_READ CLUSTER_READ CLUSTER_WRITE DEBUG DNS_READ
    DNS_USE DNS_WRITE ENCRYPTION_READ ENCRYPTION_WRITE FILE_FULL_ACCESS FILE_READ_ACCESS FS_ATTRIBUTES_READ
    FS_DELETE_TREE_READ FS_DELETE_TREE_WRITE FS_FILE_LOCK_WRITE FS_KEY_MANAGEMENT_READ FS_KEY_MANAGEMENT_WRITE
    FS_LOCK_READ FS_LOCK_WRITE FS_SETTINGS_READ FS_SETTINGS_WRITE FTP_READ FTP_WRITE IDENTITY_CONFIG_READ
    IDENTITY_CONFIG_WRITE IDENTITY_MAPPING_READ IDENTITY_MAPPING_WRITE IDENTITY_READ IDENTITY_WRITE
    KERBEROS_KEYTAB_READ KERBEROS_KEYTAB_WRITE KERBEROS_SETTINGS_READ KERBEROS_SETTINGS_WRITE KV_READ LDAP_READ
    LDAP_USE LDAP_WRITE LICENSE_READ LOCAL_GROUP_READ LOCAL_GROUP_WRITE LOCAL_USER_READ LOCAL_USER_WRITE
    METRICS_CONFIG_READ METRICS_CONFIG_WRITE METRICS_READ NETWORK_IP_ALLOCATION_READ NETWORK_READ NETWORK_WRITE
    NFS_EXPORT_READ NFS_EXPORT_WRITE NFS_SETTINGS_READ NFS_SETTINGS_WRITE OBJECT_STORAGE_URIS_READ
    OBJECT_STORAGE_URIS_WRITE PORTAL_GLOBAL_READ PORTAL_HUB_READ PORTAL_HUB_WRITE PORTAL_SPOKE_EVICT
    PORTAL_SPOKE_READ PORTAL_SPOKE_WRITE POWER_CYCLE QUOTA_READ QUOTA_WRITE REBOOT_READ REBOOT_USE RECONCILER_READ
    REPLICATION_OBJECT_READ REPLICATION_OBJECT_WRITE REPLICATION_REVERSE_RELATIONSHIP REPLICATION_SOURCE_READ
    REPLICATION_SOURCE_WRITE REPLICATION_TARGET_READ REPLICATION_TARGET_WRITE ROLE_READ ROLE_WRITE
    S3_BUCKETS_READ S3_BUCKETS_WRITE SAML_SETTINGS_READ SAML_SETTINGS_WRITE SERVICE_PUBLIC_KEYS_READ
    SERVICE_PUBLIC_KEYS_WRITE SMB_FILE_HANDLE_READ SMB_FILE_HANDLE_WRITE SMB_SESSION_READ SMB_SESSION_WRITE
    SMB_SHARE_READ SMB_SHARE_WRITE SNAPSHOT_CALCULATE_USED_CAPACITY_READ SNAPSHOT_DIFFERENCE_READ SNAPSHOT_LOCK
    SNAPSHOT_POLICY_READ SNAPSHOT_POLICY_WRITE SNAPSHOT_READ SNAPSHOT_WRITE SUPPORT_READ SUPPORT_WRITE TENANT_READ
    TENANT_WRITE TIME_READ TIME_WRITE UNCONFIGURED_NODE_READ UPGRADE_READ UPGRADE_WRITE WEB_UI_SETTINGS_WRITE"""
PRIVILEGES = frozenset(f"PRIVILEGE_{p}" for p in _PRIVILEGE_NAMES.split())
_OBJECT = r"/v3/replication/object-relationships/.*"
# (method or None for any, path regex) -> the privilege, each from the REST guide's /v1/auth/roles descriptions
# ("View ... / Create, modify ...") or, for Shift-From, its guide's "Prerequisites". None: any session.
ROUTE_PRIVILEGES: tuple[tuple[str | None, str, str | None], ...] = (
    ("GET", _OBJECT, "PRIVILEGE_REPLICATION_OBJECT_READ"),
    (None, _OBJECT, "PRIVILEGE_REPLICATION_OBJECT_WRITE"),
    ("GET", r"/v1/auth/privileges/", "PRIVILEGE_ROLE_READ"),
    ("GET", r"/v1/auth/roles/.*", "PRIVILEGE_ROLE_READ"),
    (None, r"/v1/auth/roles/.*", "PRIVILEGE_ROLE_WRITE"),
    ("GET", r"/v1/users/.*", "PRIVILEGE_LOCAL_USER_READ"),
    (None, r"/v1/users/.*", "PRIVILEGE_LOCAL_USER_WRITE"),
    ("GET", r"/v1/groups/.*", "PRIVILEGE_LOCAL_GROUP_READ"),
    ("POST", r"/v1/identity/find", "PRIVILEGE_IDENTITY_READ"),  # "Use Qumulo's identity lookup"
    ("GET", r"/v1/session/roles", None),
    # "Managing File Locks": both lock types "require the FS_FILE_LOCK_WRITE privilege" (then the ACL as well).
    ("PATCH", r"/v1/files/[^/]+/file-lock", "PRIVILEGE_FS_FILE_LOCK_WRITE"),
    (None, r"/v[12]/files/.*", None),  # file routes: the ACL decides (_check_file)
)
# Built-in local groups and the admin user: ASSUMED ids (Windows' well-known relative IDs).
GROUPS = (
    {"id": "513", "name": "Users"},
    {"id": "512", "name": "Administrators"},
    {"id": "514", "name": "Guests"},
)
ADMIN_ID = "500"
# The Everyone trustee's auth_id (qumulo-api 7.10.2.1, qumulo/lib/identity_util.py EVERYONE_ID = 0x200000000).
EVERYONE_AUTH_ID = str(0x200000000)
_EMPTY_ACL = {"control": ["PRESENT"], "posix_special_permissions": [], "aces": []}


class AuthMixin:
    """Users, roles, sessions and ACLs; `_authorize` refuses what the session's identity may not do."""

    files: dict[str, dict[str, Any]]
    tokens: set[str]
    _lock: threading.RLock

    def _file(self, ref: str) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def _init_auth(self) -> None:
        self.local_users: dict[str, dict[str, Any]] = {}  # id -> user, password included
        self.roles: dict[str, dict[str, Any]] = {}  # name -> {name, description, privileges, members (names)}
        self.sessions: dict[str, tuple[str, frozenset[str]]] = {}  # token -> (username, privileges at login)
        self.acls: dict[
            str, dict[str, Any]
        ] = {}  # path -> v2 ACL, set through the API or inherited at creation
        # What GET /v1/auth/privileges/ lists: a test removes one to stand for an older cluster version.
        self.offered_privileges: set[str] = set(PRIVILEGES)
        self._user_ids = iter(range(1001, 10**6))

    def _auth_routes(self) -> list[tuple[str, str, Any]]:
        return [
            ("GET", r"/v1/auth/roles/", lambda **_: (200, [self._role_view(r) for r in self.roles.values()])),
            ("POST", r"/v1/auth/roles/", self._create_role),
            ("GET", r"/v1/auth/roles/([^/]+)", lambda name, **_: (200, self._role_view(self._role(name)))),
            ("PATCH", r"/v1/auth/roles/([^/]+)", self._modify_role),
            ("DELETE", r"/v1/auth/roles/([^/]+)", self._delete_role),
            ("POST", r"/v1/auth/roles/([^/]+)/members", self._add_member),
            (
                "GET",
                r"/v1/users/",
                lambda **_: (200, [self._user_view(u) for u in self.local_users.values()]),
            ),
            ("POST", r"/v1/users/", self._add_user),
            ("GET", r"/v1/users/(\d+)", lambda i, **_: (200, self._user_view(self._user(i)))),
            ("POST", r"/v1/users/(\d+)/setpassword", self._set_password),
            ("DELETE", r"/v1/users/(\d+)", self._delete_user),
            ("GET", r"/v1/groups/", lambda **_: (200, [dict(g) for g in GROUPS])),
            ("POST", r"/v1/identity/find", self._find_identity),
            ("GET", r"/v1/session/roles", self._my_roles),
            # SDK qumulo.rest.roles.list_privileges: a list of {"name", "description"} (REST guide, auth_privileges).
            ("GET", r"/v1/auth/privileges/", lambda **_: (200, self._privilege_list())),
            ("GET", r"/v2/files/([^/]+)/info/acl", self._get_acl),
            ("PUT", r"/v2/files/([^/]+)/info/acl", self._put_acl),
        ]

    # ----- sessions
    def authenticate(self, username: str, password: str, admin_password: str | None) -> str | None:
        """A new session's token for a right username and password (admin or a local user), else None."""
        if username == ADMIN:
            ok, granted = admin_password is not None and password == admin_password, PRIVILEGES
        else:
            user = next((u for u in self.local_users.values() if u["name"] == username), None)
            ok = user is not None and user["password"] == password
            granted = frozenset(
                p for r in self.roles.values() if username in r["members"] for p in r["privileges"]
            )
        if not ok:
            return None
        token = f"{username}-{len(self.sessions)}-{id(self)}"
        self.sessions[token] = (username, frozenset(granted))
        return token

    def session_user(self, token: str) -> str:
        return self.sessions[token][0]

    def _authorize(self, token: str, method: str, path: str, body: Any) -> None:
        username, granted = self.sessions[token]
        if username == ADMIN:
            return
        for route_method, pattern, privilege in ROUTE_PRIVILEGES:
            if route_method in (None, method) and re.fullmatch(pattern, path):
                if privilege is not None and privilege not in granted:
                    raise QumuloFault(403, "privilege_error", f"{username} lacks {privilege}")
                if path.startswith(("/v1/files/", "/v2/files/")):
                    self._check_file(username, granted, method, path, body)
                return
        raise QumuloFault(
            403, "privilege_error", f"{username} may not {method} {path} (admin only in the fake)"
        )

    # ----- files
    def _check_file(self, username: str, granted: frozenset[str], method: str, path: str, body: Any) -> None:
        ref = unquote(path.split("/")[3])
        try:
            target, _ = self._file(ref if ref == "/" else ref.rstrip("/"))
        except QumuloFault:
            return  # the route answers its own 404
        reading = method == "GET" or path.endswith("/fetch-data")
        if "PRIVILEGE_FILE_FULL_ACCESS" in granted or (reading and "PRIVILEGE_FILE_READ_ACCESS" in granted):
            return
        if reading:
            right = "READ"
        elif path.endswith("/info/acl"):
            right = "WRITE_ACL"
        elif method == "DELETE":
            right = "DELETE"
        elif method == "POST" and isinstance(body, dict):
            right = "ADD_SUBDIR" if body.get("action") == "CREATE_DIRECTORY" else "ADD_FILE"
        else:
            right = "MODIFY"
        if not self._ace_grants(username, target, right):
            raise QumuloFault(403, "fs_access_denied_error", f"{username} lacks {right} on {target}")

    def _ace_grants(self, username: str | None, path: str, right: str) -> bool:
        """An ALLOWED ACE with `right` in the path's own ACL for the user or Everyone (None: a reader no local user
        maps to, as an NFS client's UID with no mapping). Inheritance happened at creation (_inherit_acl)."""
        user = next((u for u in self.local_users.values() if u["name"] == username), None)
        trustees = {EVERYONE_AUTH_ID} | ({user["id"]} if user else set())
        for ace in self.acls.get(path, _EMPTY_ACL)["aces"]:
            mine = str((ace.get("trustee") or {}).get("auth_id")) in trustees
            if ace.get("type") == "ALLOWED" and mine and right in (ace.get("rights") or []):
                return True
        return False

    def may_read(self, path: str, username: str | None = None) -> bool:
        """Whether `username` (None: an unmapped NFS reader) may read the file at path (no file privilege)."""
        with self._lock:
            return self._ace_grants(username, path, "READ")

    def _inherit_acl(self, path: str) -> None:
        """A new entry's ACL: its parent's inheritable ACEs (CONTAINER_INHERIT to a directory, OBJECT_INHERIT to a
        file, which keeps no inherit flags), each flagged INHERITED (qumulo/commands/fs.py INHERITED_FLAG)."""
        parent = path.rsplit("/", 1)[0] or "/"
        is_dir = self.files[path]["type"] == "FS_FILE_TYPE_DIRECTORY"
        aces = []
        for ace in self.acls.get(parent, _EMPTY_ACL)["aces"]:
            flags = set(ace.get("flags") or [])
            if ("CONTAINER_INHERIT" if is_dir else "OBJECT_INHERIT") in flags:
                kept = flags - {"INHERITED"} if is_dir else set()
                aces.append({**ace, "flags": sorted(kept | {"INHERITED"})})
        if aces:
            self.acls[path] = {**_EMPTY_ACL, "aces": aces}
        else:
            self.acls.pop(path, None)

    def _privilege_list(self) -> list[dict[str, str]]:
        return [{"name": p, "description": ""} for p in sorted(self.offered_privileges)]

    def _get_acl(self, ref: str, **_: Any) -> Reply:
        path, _info = self._file(ref if ref == "/" else ref.rstrip("/"))
        return 200, dict(self.acls.get(path, _EMPTY_ACL))

    def _put_acl(self, ref: str, body: dict[str, Any], **_: Any) -> Reply:
        path, _info = self._file(ref if ref == "/" else ref.rstrip("/"))
        self.acls[path] = {k: body.get(k, v) for k, v in _EMPTY_ACL.items()}
        return 200, self.acls[path]

    # ----- roles
    def _role(self, name: str) -> dict[str, Any]:
        if name not in self.roles:
            raise QumuloFault(404, "role_not_found_error", f"role {name} does not exist")  # ASSUMED class
        return self.roles[name]

    @staticmethod
    def _role_view(role: dict[str, Any]) -> dict[str, Any]:
        return {k: role[k] for k in ("name", "description", "privileges")}

    def _checked(self, privileges: list[str]) -> list[str]:
        unknown = sorted(set(privileges) - PRIVILEGES)
        if unknown:
            raise QumuloFault(400, "api_validation_error", f"unknown privileges {unknown}")  # ASSUMED class
        return sorted(set(privileges))

    def _create_role(self, body: dict[str, Any], **_: Any) -> Reply:
        if body["name"] in self.roles:
            raise QumuloFault(409, "role_already_exists_error", f"role {body['name']} exists")  # ASSUMED
        role = {"name": body["name"], "description": body.get("description", ""), "members": set(),
                "privileges": self._checked(list(body.get("privileges") or []))}  # fmt: skip
        self.roles[body["name"]] = role
        return 200, self._role_view(role)

    def _modify_role(self, name: str, body: dict[str, Any], **_: Any) -> Reply:
        role = self._role(name)
        if "privileges" in body:
            role["privileges"] = self._checked(list(body["privileges"]))
        role["description"] = body.get("description", role["description"])
        return 200, self._role_view(role)

    def _delete_role(self, name: str, **_: Any) -> Reply:
        self._role(name)
        del self.roles[name]
        return 200, None

    def _add_member(self, name: str, body: dict[str, Any], **_: Any) -> Reply:
        role = self._role(name)
        user = self._by_name(str(body.get("name")))
        role["members"].add(user["name"])
        return 200, self._identity(user)

    def _my_roles(self, headers: Any, **_: Any) -> Reply:
        username = self.session_user(headers.get("Authorization", "")[len("Bearer ") :])
        if username == ADMIN:
            return 200, ["Administrators"]
        return 200, sorted(r["name"] for r in self.roles.values() if username in r["members"])

    # ----- users and identities
    def _user(self, user_id: str) -> dict[str, Any]:
        if str(user_id) not in self.local_users:
            raise QumuloFault(404, "user_not_found_error", f"user {user_id} does not exist")  # ASSUMED class
        return self.local_users[str(user_id)]

    def _by_name(self, name: str) -> dict[str, Any]:
        if name == ADMIN:
            return {"id": ADMIN_ID, "name": ADMIN}
        user = next((u for u in self.local_users.values() if u["name"] == name), None)
        if user is None:
            raise QumuloFault(404, "identity_not_found_error", f"no identity named {name}")  # ASSUMED class
        return user

    @staticmethod
    def _user_view(user: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in user.items() if k != "password"} | {"can_change_password": True}

    @staticmethod
    def _identity(user: dict[str, Any]) -> dict[str, Any]:
        # ASSUMED: a local user's auth_id is its user id.
        return {"domain": "LOCAL", "auth_id": user["id"], "name": user["name"]}

    def _add_user(self, body: dict[str, Any], **_: Any) -> Reply:
        if body["name"] == ADMIN or any(u["name"] == body["name"] for u in self.local_users.values()):
            raise QumuloFault(409, "user_already_exists_error", f"user {body['name']} exists")  # ASSUMED
        if str(body["primary_group"]) not in {g["id"] for g in GROUPS}:
            raise QumuloFault(404, "group_not_found_error", f"group {body['primary_group']}")  # ASSUMED
        user_id = str(next(self._user_ids))
        self.local_users[user_id] = {
            "id": user_id, "name": body["name"], "primary_group": str(body["primary_group"]),
            "sid": f"S-1-5-21-fake-{user_id}", "uid": body.get("uid") or "",
            "home_directory": body.get("home_directory"), "password": body["password"],
        }  # fmt: skip
        return 200, self._user_view(self.local_users[user_id])

    def _set_password(self, user_id: str, body: dict[str, Any], **_: Any) -> Reply:
        self._user(user_id)["password"] = body["new_password"]
        return 200, None

    def _delete_user(self, user_id: str, **_: Any) -> Reply:
        name = self._user(user_id)["name"]
        for role in self.roles.values():
            role["members"].discard(name)
        del self.local_users[user_id]
        return 200, None

    def _find_identity(self, body: dict[str, Any], **_: Any) -> Reply:
        return 200, self._identity(self._by_name(str(body.get("name"))))
