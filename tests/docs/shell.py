"""Enough of POSIX shell to split documented command lines into simple commands and their words.

Handles what the docs use: quotes, backslash-newline continuations, comments, `|`, `||`, `&&`, `;`, `&`,
redirections, variable references and `$(...)` / `$((...))` substitutions (whose inner commands are
returned too, so `X=$(aws ...)` checks the `aws` command). A word is kept with its quotes removed and a
flag saying whether the shell would expand part of it at run time (then its value is unknown here).
Placeholders `<like-this>` are words, not redirections: the docs' convention (tests/docs/conventions.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# `<` followed by a letter and closed on the same line is a placeholder in the docs, whatever its style;
# conventions.py judges the style.
_PLACEHOLDER_START = re.compile(r"<[A-Za-z][^<>\n]*>")
_LEADING_RESERVED_WORDS = frozenset({"do", "then", "else", "elif", "if", "while", "until", "!", "{", "time"})
_OPERATORS = ("&&", "||", "|", ";", "&", "\n")
_REDIRECT = re.compile(r"(?:\d*>&\d+|&>>?|\d*>>?|<<?|\d+<)")


class ShellSyntaxError(ValueError):
    """The text is not shell the lexer understands (e.g. an unterminated quote)."""


@dataclass
class Word:
    """One argument: its text with quotes removed, and whether the shell expands part of it."""

    text: str
    dynamic: bool = False


@dataclass
class Command:
    """A simple command: its words (after `VAR=value` prefixes) and the line it starts on."""

    words: list[Word]
    line: int
    assignments: list[Word] = field(default_factory=list)

    @property
    def argv(self) -> list[str]:
        return [w.text for w in self.words]

    def __str__(self) -> str:
        return " ".join(w.text for w in self.words)


class _Lexer:
    def __init__(self, text: str, line: int) -> None:
        self.text = text
        self.pos = 0
        self.line = line
        self.commands: list[Command] = []

    def error(self, message: str) -> ShellSyntaxError:
        return ShellSyntaxError(f"line {self.line}: {message}")

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def advance(self, n: int = 1) -> str:
        chunk = self.text[self.pos : self.pos + n]
        self.line += chunk.count("\n")
        self.pos += n
        return chunk

    def run(self, *, until: str | None = None) -> None:
        """Lex commands up to the end of the text, or up to an unmatched `until` (for `$(...)`)."""
        words: list[Word] = []
        start = self.line
        while self.pos < len(self.text):
            ch = self.peek()
            if until and ch == until:
                break
            if ch == "\\" and self.peek(2) == "\\\n":
                self.advance(2)
            elif ch in " \t":
                self.advance()
            elif ch == "#":
                while self.pos < len(self.text) and self.peek() != "\n":
                    self.advance()
            elif any(self.text.startswith(op, self.pos) for op in _OPERATORS):
                op = next(op for op in _OPERATORS if self.text.startswith(op, self.pos))
                self._finish(words, start)
                self.advance(len(op))
                words, start = [], self.line
            elif ch in "()":
                # A subshell or group: its contents are commands like any other.
                self._finish(words, start)
                self.advance()
                words, start = [], self.line
            elif _PLACEHOLDER_START.match(self.text, self.pos) is None and (
                redirect := _REDIRECT.match(self.text, self.pos)
            ):
                self.advance(len(redirect.group()))
                if not re.fullmatch(r"\d*>&\d+", redirect.group()):
                    while self.peek() in (" ", "\t"):
                        self.advance()
                    self._word()  # the redirection's target is not an argument
            else:
                before = self.pos
                words.append(self._word())
                if self.pos == before:  # never loop on a character nothing above consumes
                    raise self.error(f"unexpected {ch!r}")
        self._finish(words, start)

    def _finish(self, words: list[Word], line: int) -> None:
        # `do aws ...` runs `aws ...`: reserved words that may precede a command are not its name.
        while words and words[0].text in _LEADING_RESERVED_WORDS and not words[0].dynamic:
            words.pop(0)
        assignments: list[Word] = []
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0].text):
            assignments.append(words.pop(0))
        if words or assignments:
            self.commands.append(Command(words=words, line=line, assignments=assignments))

    def _word(self) -> Word:
        text: list[str] = []
        dynamic = False
        while self.pos < len(self.text):
            ch = self.peek()
            if ch in " \t\n;&|)":
                break
            if ch == "\\":
                if self.peek(2) == "\\\n":
                    self.advance(2)
                    continue
                self.advance()
                text.append(self.advance())
            elif ch == "'":
                self.advance()
                end = self.text.find("'", self.pos)
                if end < 0:
                    raise self.error("unterminated single quote")
                text.append(self.advance(end - self.pos))
                self.advance()
            elif ch == '"':
                self.advance()
                dynamic |= self._double_quoted(text)
            elif ch == "$":
                dynamic = True
                text.append(self._dollar())
            elif ch == "<" and (m := _PLACEHOLDER_START.match(self.text, self.pos)):
                text.append(self.advance(len(m.group())))
            else:
                text.append(self.advance())
        return Word("".join(text), dynamic)

    def _double_quoted(self, text: list[str]) -> bool:
        dynamic = False
        while True:
            if self.pos >= len(self.text):
                raise self.error("unterminated double quote")
            ch = self.peek()
            if ch == '"':
                self.advance()
                return dynamic
            if ch == "\\" and self.peek(2)[1:] in ('"', "\\", "$", "`", "\n"):
                self.advance()
                escaped = self.advance()
                if escaped != "\n":
                    text.append(escaped)
            elif ch == "$":
                dynamic = True
                text.append(self._dollar())
            else:
                text.append(self.advance())

    def _dollar(self) -> str:
        """`$VAR`, `${VAR}`, `$(command)` or `$((arithmetic))`; inner commands are lexed as well."""
        start = self.pos
        self.advance()
        if self.peek(2) == "((":
            self.advance(2)
            depth = 2
            while depth:
                if self.pos >= len(self.text):
                    raise self.error("unterminated $((")
                if self.peek(2) == "$(" and self.peek(3) != "$((":
                    self._dollar()
                    continue
                ch = self.advance()
                depth += {"(": 1, ")": -1}.get(ch, 0)
        elif self.peek() == "(":
            self.advance()
            inner = _Lexer(self.text, self.line)
            inner.pos = self.pos
            inner.run(until=")")
            if inner.pos >= len(self.text):
                raise self.error("unterminated $(")
            self.commands.extend(inner.commands)
            self.advance(inner.pos - self.pos + 1)
        elif self.peek() == "{":
            end = self.text.find("}", self.pos)
            if end < 0:
                raise self.error("unterminated ${")
            self.advance(end - self.pos + 1)
        else:
            while self.pos < len(self.text) and re.match(r"[A-Za-z0-9_?@#*!-]", self.peek()):
                self.advance()
        return self.text[start : self.pos]


def parse(text: str, line: int = 1) -> list[Command]:
    """Every simple command in `text`, nested substitutions included (outer commands first)."""
    lexer = _Lexer(text, line)
    lexer.run()
    if lexer.pos < len(text):
        raise lexer.error(f"unexpected {text[lexer.pos]!r}")
    return sorted(lexer.commands, key=lambda c: c.line)
