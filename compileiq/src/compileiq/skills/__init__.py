"""Agent skills shipped with CompileIQ: one folder per skill, each holding a SKILL.md.

A SKILL.md starts with YAML front matter (``name``, ``description``, ``when_to_use``) followed by
Markdown instructions for a coding agent. ``install(dest)`` copies the skills into an agent's
skills folder (for example ``~/.claude/skills``); ``python -m compileiq skills install DEST`` does
the same from the shell.

    from compileiq import skills
    skills.skill_names()                  # ['compileiq-author-objective', ..., 'compileiq-search-space']
    skills.skill_path("compileiq-debug")  # the folder holding its SKILL.md
    skills.install("~/.claude/skills")    # copies every skill, returns the written SKILL.md paths
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..utils.fs import atomic_write

SKILL_FILE = "SKILL.md"


class SkillError(ValueError):
    """An unknown skill, a damaged SKILL.md, or a destination that cannot be written.

    From ``install``: ``written`` holds the SKILL.md files copied before the problem, ``kept`` the
    existing ones left alone because they differ from the shipped text."""

    def __init__(self, message: str, written=(), kept=()):
        super().__init__(message)
        self.written, self.kept = list(written), list(kept)


def _root():
    return resources.files(__name__)


def skill_names() -> list[str]:
    """The names of the shipped skills, sorted (each is a folder holding a SKILL.md)."""
    return sorted(p.name for p in _root().iterdir() if p.is_dir() and (p / SKILL_FILE).is_file())


def _check(name: str) -> None:
    names = skill_names()
    if name not in names:
        raise SkillError(f"no skill named {name!r}; the skills are: {', '.join(names)}")


def skill_path(name: str) -> Path:
    """The folder of skill ``name`` (its SKILL.md is ``skill_path(name) / "SKILL.md"``)."""
    _check(name)
    return Path(str(_root() / name))


def skill_text(name: str) -> str:
    """The full text of skill ``name``'s SKILL.md."""
    _check(name)
    return (_root() / name / SKILL_FILE).read_text(encoding="utf-8")


@dataclass(frozen=True)
class FrontMatter:
    name: str
    description: str
    when_to_use: tuple[str, ...]


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        body = raw[1:-1]
        return body.replace("''", "'") if raw[0] == "'" else body.replace('\\"', '"').replace("\\\\", "\\")
    return raw


def parse_front_matter(text: str, where: str = "SKILL.md") -> FrontMatter:
    """Read the front matter of a SKILL.md: the block between the first two ``---`` lines.

    The subset of YAML the skills use: ``key: value`` lines (a value may be quoted) and
    ``key:`` followed by ``  - item`` lines. Raises SkillError naming what is missing."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillError(f"{where}: does not start with a '---' front-matter line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise SkillError(f"{where}: the front matter has no closing '---' line") from None
    fields: dict[str, object] = {}
    key = None
    for n, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith((" ", "\t")):
            item = line.strip()
            if key is None or not item.startswith("- ") or not isinstance(fields.get(key), list):
                raise SkillError(f"{where}:{n}: an indented line must be a '- item' of a list key")
            fields[key].append(_scalar(item[2:]))
            continue
        k, sep, value = line.partition(":")
        if not sep or not k.strip():
            raise SkillError(f"{where}:{n}: expected 'key: value', got {line!r}")
        key = k.strip()
        fields[key] = _scalar(value) if value.strip() else []
    missing = [k for k in ("name", "description", "when_to_use") if not fields.get(k)]
    if missing:
        raise SkillError(f"{where}: the front matter lacks {', '.join(missing)}")
    if not isinstance(fields["name"], str) or not isinstance(fields["description"], str):
        raise SkillError(f"{where}: name and description must be single-line values")
    if not isinstance(fields["when_to_use"], list):
        raise SkillError(f"{where}: when_to_use must be a list of '- item' lines")
    return FrontMatter(fields["name"], fields["description"], tuple(fields["when_to_use"]))


def front_matter(name: str) -> FrontMatter:
    """The parsed front matter of skill ``name``."""
    return parse_front_matter(skill_text(name), f"{name}/{SKILL_FILE}")


def install(dest: str | os.PathLike, names=None, *, overwrite: bool = False) -> list[Path]:
    """Copy skills into ``dest`` (created if needed) as ``dest/<name>/SKILL.md``; return those paths.

    ``names``: the skills to copy (default: all). An existing SKILL.md with the same text is
    rewritten; one that differs (an older version, or your own edits) is replaced only with
    ``overwrite=True``: otherwise the others are copied and SkillError lists what was left alone."""
    dest = Path(dest).expanduser()
    chosen = skill_names() if names is None else list(names)
    for name in chosen:
        _check(name)
    if dest.exists() and not dest.is_dir():
        raise SkillError(f"{dest} exists and is not a folder; give the agent's skills folder, e.g. ~/.claude/skills")
    written, kept = [], []
    for name in chosen:
        text = skill_text(name)
        target = dest / name / SKILL_FILE
        try:
            if target.is_file() and target.read_text(encoding="utf-8") != text and not overwrite:
                kept.append(target)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, text)
        except OSError as exc:
            raise SkillError(f"cannot write {target} ({exc.strerror or exc}); choose a writable folder",
                             written, kept) from None
        written.append(target)
    if kept:
        raise SkillError("left alone, because they differ from the shipped skills (pass overwrite=True, or "
                         "--force on the command line, to replace them): " + ", ".join(map(str, kept)), written, kept)
    return written


__all__ = ["skill_names", "skill_path", "skill_text", "front_matter", "parse_front_matter", "FrontMatter", "install",
           "SkillError", "SKILL_FILE"]
