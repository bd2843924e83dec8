"""Where the Lambda sandbox (tests/lambda_runtime.py) puts what Lambda's image has: /usr/bin, /opt, /var/runtime.

/usr/bin. A handler that shells out to a tool found only on this machine must fail here as on Lambda, so the
sandbox's /usr/bin (and /bin) holds only the programs of the packages the Lambda Python image is known to
ship, copied from this machine: bash (also as sh: Amazon Linux's sh is bash), coreutils, grep, gawk and
curl. Source: `rpm -qa` in public.ecr.aws/lambda/python:3.12 (amazonlinux/amazon-linux-2023 issue #585)
lists bash, coreutils-single, curl-minimal, gawk and grep. That image's other packages are left out where
the tools they install were not confirmed: the sandbox may lack a tool Lambda has (a failure here that
Lambda would not show) but never offers one Lambda lacks (kubectl, helm, aws, docker, git, mount, setpriv).
A program this machine does not have (gawk here: its awk is mawk) is simply absent.

/opt. Each layer's zip is extracted into /opt (Lambda developer guide, "Adding layers"); two layers that
write the same top-level entry are refused rather than overlaid. Each file gets the modification time its zip
records, as Info-ZIP's unzip restores it. That matters to one thing, the time a run takes: the AWS CLI layer
ships bytecode compiled by CPython 3.11 beside its sources, and CPython uses a .pyc only if the source's time
matches the one in its header, so with extraction times every `aws` run would compile its modules anew (about
0.6 s of 1.3 s here). On Lambda (python3.14) the 3.11 bytecode is never used; the same sources run either way.

/var/runtime. The runtime's bootstrap and the SDK it provides, as copies the sandbox user may read wherever
the checkout lives (lambda_var_runtime says why).
"""

from __future__ import annotations

import compileall
import hashlib
import json
import os
import shutil
import stat
import struct
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

# GNU coreutils' programs (the image's coreutils-single packs them all in one binary).
_COREUTILS = tuple(
    name
    for line in (
        "[ arch b2sum base32 base64 basename basenc cat chcon chgrp chmod chown cksum comm cp csplit cut date",
        "dd df dir dircolors dirname du echo env expand expr factor false fmt fold groups head hostid id",
        "install join link ln logname ls md5sum mkdir mkfifo mknod mktemp mv nice nl nohup nproc numfmt od",
        "paste pathchk pinky pr printenv printf ptx pwd readlink realpath rm rmdir runcon seq sha1sum sha224sum",
        "sha256sum sha384sum sha512sum shred shuf sleep sort split stat stdbuf stty sum sync tac tail tee test",
        "timeout touch tr true truncate tsort tty uname unexpand uniq unlink users vdir wc who whoami yes",
    )
    for name in line.split()
)
# The sandbox's /usr/bin: name -> the program on this machine that stands in for it.
LAMBDA_USR_BIN: dict[str, str] = {
    **{name: name for name in _COREUTILS},
    "bash": "bash",
    "sh": "bash",  # this machine's sh may be dash
    "grep": "grep",
    "egrep": "egrep",
    "fgrep": "fgrep",
    "gawk": "gawk",
    "awk": "gawk",  # only GNU awk: another awk would not be Lambda's
    "curl": "curl",
}


class SandboxUnavailable(RuntimeError):
    """This machine cannot build the Lambda-like sandbox; the message says why."""


def host_program(name: str) -> Path:
    """The program `name` on this machine's PATH, links resolved."""
    found = shutil.which(name)
    if found is None:
        raise SandboxUnavailable(f"the Lambda sandbox needs {name} on this machine")
    return Path(found).resolve()


def lambda_usr_bin() -> Path:
    """A directory with this machine's programs for LAMBDA_USR_BIN, made once per content.

    It lives in the user's cache, not under /tmp: the sandbox covers /tmp before it mounts this on /usr/bin.
    """
    found = {name: Path(p).resolve() for name, host in LAMBDA_USR_BIN.items() if (p := shutil.which(host))}
    if "env" not in found or "bash" not in found:
        raise SandboxUnavailable("the Lambda sandbox's /usr/bin needs this machine's env and bash")
    fingerprint = json.dumps({n: [str(p), p.stat().st_size, p.stat().st_mtime_ns] for n, p in found.items()})
    digest = hashlib.sha256(fingerprint.encode()).hexdigest()[:16]

    def fill(partial: Path) -> None:
        for name, program in found.items():
            shutil.copy2(program, partial / name)

    return _made_once("usr-bin", digest, fill)


def _made_once(kind: str, digest: str, fill: Callable[[Path], None]) -> Path:
    """`<cache>/<kind>-<digest>`, filled by `fill` in a scratch directory and published whole, once per content."""
    cache = cache_root()
    target = cache / f"{kind}-{digest}"
    if target.is_dir():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{kind}-{digest}-", dir=cache))
    fill(partial)
    return _publish(partial, target)


def cache_root() -> Path:
    """The user's cache, where the sandbox's read-only trees are made: not under /tmp, which the sandbox hides."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").resolve() / "hubspoke-lambda"
    if Path(tempfile.gettempdir()).resolve() in cache.parents or Path("/tmp") in cache.parents:
        raise SandboxUnavailable(f"the sandbox's cache {cache} must not be under /tmp, which it covers")
    return cache


def lambda_var_runtime(texts: Mapping[str, str], sources: Mapping[str, Path]) -> Path:
    """Lambda's /var/runtime as files of its own: `texts` written and `sources` copied, made once per content.

    On Lambda the runtime's code and the SDK it provides are part of the runtime's image: real files in
    /var/runtime (boto3, botocore, ... and their dist-info: `ls /var/runtime` in lambci's copies of the
    runtime images, shown in aio-libs/aiobotocore issue #833), owned by root and readable by the function's
    user. A link from here to this machine's copy would resolve only where the sandbox user may walk the whole
    path to it: a checkout (and its .venv) under an owner-only directory, such as root's home (0700), would
    lose boto3, and one under /tmp would dangle behind the sandbox's fresh /tmp. So everything is copied
    (links followed), made readable to others, and kept under the user's cache, from where the sandbox binds
    it; the checkout's own files are never touched.
    """
    listing: dict[str, object] = {
        name: hashlib.sha256(text.encode()).hexdigest() for name, text in texts.items()
    }
    # Trees made before their bytecode was compiled (below) are made again, not reused. The key begins with a
    # space, which no name the callers give (the runtime's file and package names) does.
    listing[" bytecode"] = sys.implementation.cache_tag
    for name, source in sources.items():
        origin = source.resolve()
        files = [origin] if origin.is_file() else sorted(_files(origin))
        listing[name] = [str(origin), *[[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files]]
    digest = hashlib.sha256(json.dumps(listing, sort_keys=True).encode()).hexdigest()[:16]

    def fill(partial: Path) -> None:
        for name, text in texts.items():
            (partial / name).write_text(text)
        for name, source in sources.items():
            (partial / name).parent.mkdir(parents=True, exist_ok=True)
            if source.resolve().is_dir():
                shutil.copytree(source, partial / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, partial / name)
        # The SDK's bytecode, compiled once here as pip compiles what it installs (pip install's --compile is
        # the default): the sandbox's tree is read-only, so without it every cold start compiled botocore
        # again (0.4 s of a 0.9 s boto3 import and client, measured). Python reads a .pyc only while its
        # source's size and mtime match (PEP 552's default, timestamp-based pycs), so what runs is the source.
        # Beside each source, for the sandbox's plain `python -S` (no -O, no PYTHONPYCACHEPREFIX).
        prefix, sys.pycache_prefix = sys.pycache_prefix, None
        try:
            compileall.compile_dir(partial, quiet=2, optimize=0)
        finally:
            sys.pycache_prefix = prefix

    return _made_once("runtime", digest, fill)


def _files(directory: Path) -> list[Path]:
    """Every file under `directory` but compiled caches, links followed (as the copy follows them)."""
    found = []
    for root, dirs, names in os.walk(directory, followlinks=True):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found += [Path(root) / name for name in names]
    return found


def world_readable(path: Path) -> None:
    """Others may read (and enter) everything: the sandbox user owns nothing, as on Lambda."""
    for item in [path, *path.rglob("*")]:
        if item.is_symlink():
            continue
        mode = item.stat().st_mode
        extra = stat.S_IROTH | (stat.S_IXOTH if item.is_dir() or mode & stat.S_IXUSR else 0)
        item.chmod(mode | extra | (stat.S_IRGRP | stat.S_IXGRP if item.is_dir() else stat.S_IRGRP))


# Part of an extracted layer's cache key: a change to how layers are extracted must not reuse older trees.
_LAYER_TREE_FORMAT = "mtimes"
# Info-ZIP's extended timestamp extra field ("UT"), flag bit 0: a modification time in Unix seconds follows
# (Info-ZIP's proginfo/extrafld.txt, "Extended Timestamp Extra Field").
_EXTENDED_TIMESTAMP = 0x5455


def zip_entry_mtime(info: zipfile.ZipInfo) -> float:
    """An entry's modification time as unzip restores it: the extended timestamp if any, else the DOS time."""
    extra = info.extra
    while len(extra) >= 4:
        tag, size = struct.unpack("<HH", extra[:4])
        body = extra[4 : 4 + size]
        if tag == _EXTENDED_TIMESTAMP and size >= 5 and body[0] & 1:
            return float(struct.unpack("<i", body[1:5])[0])
        extra = extra[4 + size :]
    # The DOS time has no zone and two-second steps; unzip reads it as local time.
    return time.mktime((*info.date_time, 0, 0, -1))


def extracted_layer(zip_path: Path) -> Path:
    """The layer's zip extracted once per content (cached under the temp dir), modes and times kept as zipped."""
    digest = hashlib.sha256(zip_path.read_bytes()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / "hubspoke-lambda-layers" / f"{digest}-{_LAYER_TREE_FORMAT}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(target.parent, 0o755)
    partial = Path(tempfile.mkdtemp(prefix=f"{digest}-", dir=target.parent))
    extract_zip(zip_path, partial)
    return _publish(partial, target)


def extract_zip(zip_path: Path, destination: Path) -> None:
    """Every entry of the zip under `destination`, with the modes and modification times it records."""
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            archive.extract(info, destination)
            mode = info.external_attr >> 16
            if mode:  # zipfile drops permissions; the layer's executables must stay executable
                (destination / info.filename).chmod(stat.S_IMODE(mode))
            if not info.is_dir():  # zipfile drops times too; a directory's changes as its files arrive
                mtime = zip_entry_mtime(info)
                os.utime(destination / info.filename, (mtime, mtime))


def _publish(partial: Path, target: Path) -> Path:
    """Make a finished cache entry readable by the sandbox user and move it into place, once."""
    world_readable(partial)
    try:
        partial.rename(target)
    except OSError:  # another process won the race with identical content
        shutil.rmtree(partial, ignore_errors=True)
    return target


def merge_layers(extracted: Sequence[Path]) -> dict[str, Path]:
    """Top-level /opt entries of every layer; two layers writing the same one is refused, not overlaid."""
    merged: dict[str, Path] = {}
    for layer in extracted:
        for entry in sorted(layer.iterdir()):
            if entry.name in merged:
                raise SandboxUnavailable(
                    f"two layers both provide /opt/{entry.name}; the sandbox does not merge"
                )
            merged[entry.name] = entry
    return merged
