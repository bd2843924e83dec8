"""The share of a package's characters in comments and string literals (issue 43 measured 46 % for hubspoke/).

`python tools/comment_share.py [PATH ...]` (default: hubspoke) prints the characters of COMMENT and STRING tokens
(Python's tokenize module; on 3.12+ an f-string's literal parts) over every character of the .py files under
each PATH. A tool, not part of the package: it reads source, it imports none.
"""

from __future__ import annotations

import io
import sys
import tokenize
from collections.abc import Iterable
from pathlib import Path

_COUNTED = {
    tokenize.COMMENT,
    tokenize.STRING,
    *(
        getattr(tokenize, name)
        for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
        if hasattr(tokenize, name)
    ),
}


def counts(source: str) -> tuple[int, int]:
    """(characters in comments and strings, all characters) of one module's source."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return sum(len(t.string) for t in tokens if t.type in _COUNTED), len(source)


def python_files(paths: Iterable[Path]) -> list[Path]:
    """The .py files a path names: itself, or every one under a directory."""
    return sorted(f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py")))


def share(paths: Iterable[Path]) -> tuple[int, int]:
    """(characters in comments and strings, all characters) summed over the .py files of `paths`."""
    counted = total = 0
    for path in python_files(paths):
        c, t = counts(path.read_text(encoding="utf-8"))
        counted, total = counted + c, total + t
    return counted, total


def main(argv: list[str]) -> int:
    counted, total = share([Path(a) for a in argv] or [Path("hubspoke")])
    print(f"{counted}/{total} = {counted / total:.1%}" if total else "no Python source")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
