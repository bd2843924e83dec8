"""Where commands live in the docs: shell code blocks and inline code spans of README.md and docs/**.md.

Fenced blocks are CommonMark fences (``` or ~~~, possibly indented inside list items); their info string
says what they hold. Inline code spans may wrap across lines inside a paragraph, as Markdown allows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Languages whose blocks are shell commands; everything else (yaml, text, json, ...) is not checked.
SHELL_LANGUAGES = frozenset({"sh", "bash", "shell", "console"})
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_INLINE = re.compile(r"(?<!`)(`+)(?!`)(?P<code>.+?)(?<!`)\1(?!`)", re.S)


@dataclass(frozen=True)
class Snippet:
    """Code from a doc: a whole fenced block or one inline span, with the line it starts on."""

    path: Path
    line: int
    text: str
    kind: str  # "block" (fenced, with its language) or "inline"
    language: str = ""
    generated: bool = False  # inside a block `make docs` renders from --help (docs/cli.md)

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"


# The markers around what `make docs` renders (hubspoke/cli/reference.py, hubspoke/config/reference.py).
_GENERATED = re.compile(r"<!-- BEGIN generated.*?<!-- END generated -->", re.S)

_PROMPT = re.compile(r"^\s*\$ ")


def command_text(snippet: Snippet) -> str:
    """The shell a snippet holds: `$ ` prompts removed; in a `console` block, only prompted lines (and the lines
    they continue onto with a trailing backslash) are commands, the rest is output (blanked, so line numbers
    stay those of the file)."""
    lines, continued = [], False
    for line in snippet.text.split("\n"):
        prompted = _PROMPT.match(line)
        if prompted:
            line = line[prompted.end() :]
        elif snippet.language == "console" and not continued:
            line = ""
        continued = bool(prompted or continued) and line.rstrip().endswith("\\")
        lines.append(line)
    return "\n".join(lines)


def doc_files(root: Path) -> list[Path]:
    """README.md and every Markdown file under docs/, in a stable order."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def snippets(path: Path) -> Iterator[Snippet]:
    """Every fenced block and every inline code span of one Markdown file."""
    text = path.read_text()
    generated = [
        (text.count("\n", 0, m.start()) + 1, text.count("\n", 0, m.end()) + 1)
        for m in _GENERATED.finditer(text)
    ]
    lines = text.splitlines(keepends=True)
    prose: list[tuple[int, str]] = []  # (line number, text) outside fences
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i].rstrip("\n"))
        if not opening:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        language = opening["info"].strip().split(" ")[0].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not re.match(rf"^ *{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[j]):
            # Content of an indented fence loses up to that indentation (CommonMark 4.5).
            body.append(re.sub(rf"^ {{0,{indent}}}", "", lines[j]))
            j += 1
        yield Snippet(path, i + 2, "".join(body), "block", language)
        i = j + 1
    for span in _inline_spans(path, prose):
        inside = any(first <= span.line <= last for first, last in generated)
        yield Snippet(span.path, span.line, span.text, span.kind, generated=inside)


def _inline_spans(path: Path, prose: list[tuple[int, str]]) -> Iterator[Snippet]:
    # Paragraphs end at blank lines; a span never crosses one.
    paragraph: list[tuple[int, str]] = []
    for number, text in [*prose, (0, "\n")]:
        if text.strip():
            paragraph.append((number, text))
            continue
        if paragraph:
            joined = "".join(t for _, t in paragraph)
            starts = [n for n, t in paragraph for _ in t]  # line number of every character
            for match in _INLINE.finditer(joined):
                code = " ".join(match["code"].split())
                yield Snippet(path, starts[match.start()], code, "inline")
        paragraph = []
