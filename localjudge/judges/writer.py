"""Write a judge spec back as a judge file (TOML), as `localjudge align` does for the judges it calibrates.

The writer is small and checked: top-level scalars first, then tables and arrays of tables; multi-line
prompt text as TOML multi-line literal strings when that is exact, else as escaped basic strings; None
values are left out (TOML has no null). The text is parsed back and must give the same data, or a
`JudgeSpecError` says so (nothing is written).
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from ..errors import JudgeSpecError

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k, ensure_ascii=False)


def _basic(s: str) -> str:
    # JSON escapes are TOML basic-string escapes, except that TOML also forbids a raw DEL
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def _string(s: str, multiline: bool) -> str:
    literal_ok = (
        multiline
        and "\n" in s
        and "'''" not in s
        and not s.endswith("'")
        and not any((ord(c) < 32 and c not in "\n\t") or c == "\x7f" for c in s)
        and "\r" not in s
    )
    return "'''\n" + s + "'''" if literal_ok else _basic(s)


def _value(v: Any, multiline: bool = False) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise JudgeSpecError(f"cannot write the non-finite number {v!r} to a judge file")
        return repr(v)
    if isinstance(v, str):
        return _string(v, multiline)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v if x is not None) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(x)}" for k, x in v.items() if x is not None) + "}"
    raise JudgeSpecError(f"cannot write a {type(v).__name__} to a judge file")


def _drop_none(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _drop_none(x) for k, x in v.items() if x is not None}
    if isinstance(v, (list, tuple)):
        return [_drop_none(x) for x in v if x is not None]
    return v


def _table(lines: list[str], data: dict[str, Any], path: str) -> None:
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict) and not _is_table_array(v)}
    for k, v in scalars.items():
        lines.append(f"{_key(k)} = {_value(v, multiline=True)}")
    for k, v in data.items():
        name = f"{path}.{_key(k)}" if path else _key(k)
        if isinstance(v, dict):
            lines.append(f"[{name}]")
            _table(lines, v, name)
        elif _is_table_array(v):
            for item in v:
                lines.append(f"[[{name}]]")
                _table(lines, item, name)


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def dump_judge_toml(data: dict[str, Any], header: str = "") -> str:
    """A judge spec (as `JudgeSpec.model_dump(mode="json")`) as judge-file TOML that parses back to the same data."""
    clean = _drop_none(data)
    lines = [f"# {ln}" if ln else "#" for ln in header.splitlines()]
    _table(lines, clean, "")
    text = "\n".join(lines) + "\n"
    try:
        back = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:  # pragma: no cover - a writer bug
        raise JudgeSpecError(f"the judge file written for {data.get('name')!r} is not valid TOML ({e})") from None
    if back != clean:  # pragma: no cover - a writer bug
        raise JudgeSpecError(f"the judge file written for {data.get('name')!r} does not read back the same; not written")
    return text
