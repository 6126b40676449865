"""Line numbers of the keys in a TOML file, so that a plan error can name the line.

``tomllib`` gives values without positions; this scanner walks the same text once and records,
for every key path (``("variant", 1, "command")``, the shape of pydantic's error locations), the
line where the key is written. It assumes the text already parsed with ``tomllib`` (it is only
asked about valid files) and handles what TOML allows: ``[table]`` and ``[[array]]`` headers,
dotted and quoted keys, inline tables, arrays spanning lines, every string form, comments.
"""
from __future__ import annotations

Path = tuple


class KeyLines:
    """``line(path)``: the line of the key at ``path``, or of its nearest written ancestor."""

    def __init__(self, text: str):
        self._text = text
        self._i = 0
        self._line = 1
        self.lines: dict[Path, int] = {}
        self._arrays: dict[Path, int] = {}  # array-of-tables path -> index of its last element
        self._scan()

    def line(self, path) -> int | None:
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    # -- low level ---------------------------------------------------------------------------
    def _peek(self, n: int = 1) -> str:
        return self._text[self._i:self._i + n]

    def _advance(self, n: int = 1) -> None:
        self._line += self._text.count("\n", self._i, self._i + n)
        self._i += n

    def _skip_space(self, newlines: bool = False) -> None:
        while self._i < len(self._text):
            c = self._text[self._i]
            if c in " \t\r" or (newlines and c == "\n"):
                self._advance()
            elif c == "#":
                end = self._text.find("\n", self._i)
                self._advance((len(self._text) if end < 0 else end) - self._i)
            else:
                return

    def _string(self) -> str:
        quote = self._peek()
        if self._peek(3) == quote * 3:
            end = self._text.find(quote * 3, self._i + 3)
            while self._text[end + 3:end + 4] == quote:  # up to two quotes may close the body
                end += 1
            value = self._text[self._i + 3:end]
            self._advance(end + 3 - self._i)
            return value
        j = self._i + 1
        while self._text[j] != quote:
            j += 2 if quote == '"' and self._text[j] == "\\" else 1
        value = self._text[self._i + 1:j]
        self._advance(j + 1 - self._i)
        return value

    def _key(self) -> list[str]:
        parts = []
        while True:
            self._skip_space()
            if self._peek() in ('"', "'"):
                parts.append(self._string())
            else:
                j = self._i
                while j < len(self._text) and (self._text[j].isalnum() or self._text[j] in "-_"):
                    j += 1
                parts.append(self._text[self._i:j])
                self._advance(j - self._i)
            self._skip_space()
            if self._peek() != ".":
                return parts
            self._advance()

    # -- structure ---------------------------------------------------------------------------
    def _resolve(self, parts: list[str]) -> Path:
        """A header's path with array-of-tables prefixes pointing at their last element."""
        path: tuple = ()
        for part in parts:
            path += (part,)
            if path in self._arrays:
                path += (self._arrays[path],)
        return path

    def _scan(self) -> None:
        table: Path = ()
        while True:
            self._skip_space(newlines=True)
            if self._i >= len(self._text):
                return
            line = self._line
            if self._peek(2) == "[[":
                self._advance(2)
                parts = self._key()
                self._advance(2)
                base = self._resolve(parts[:-1]) + (parts[-1],)
                self._arrays[base] = self._arrays.get(base, -1) + 1
                self.lines.setdefault(base, line)
                table = base + (self._arrays[base],)
                self.lines[table] = line
            elif self._peek() == "[":
                self._advance()
                parts = self._key()
                self._advance()
                table = self._resolve(parts)
                self.lines[table] = line
            else:
                self._pair(table)

    def _pair(self, table: Path) -> None:
        line = self._line
        path = table + tuple(self._key())
        self.lines[path] = line
        self._advance()  # "="
        self._skip_space()
        self._value(path)

    def _value(self, path: Path) -> None:
        c = self._peek()
        if c in ('"', "'"):
            self._string()
        elif c == "[":
            self._advance()
            index = 0
            while True:
                self._skip_space(newlines=True)
                if self._peek() == "]":
                    self._advance()
                    return
                if self._peek() == ",":
                    self._advance()
                    continue
                self.lines.setdefault(path + (index,), self._line)
                self._value(path + (index,))
                index += 1
        elif c == "{":
            self._advance()
            while True:
                self._skip_space()
                if self._peek() == "}":
                    self._advance()
                    return
                if self._peek() == ",":
                    self._advance()
                    continue
                self._pair(path)
        else:  # number, bool, date: up to a delimiter
            j = self._i
            while j < len(self._text) and self._text[j] not in ",]}\n#":
                j += 1
            self._advance(j - self._i)
