"""The tracked tree describes the software as it is, not the history of its making.

Code comments, docstrings, docs, benchmarks and tests speak of what the software does now and
cite the docs pages (docs/benchmarks.md, docs/design/...) for figures and decisions. They do not
refer to the project's own work history: numbered sessions, stops or rounds, this project's
issue numbers, dated work-log headings, or the retired diaries (the NOTES file and the dated
BENCHMARKS file, whose last version is tagged `diary-final`). git keeps the history.

References to other projects' issues stay allowed: `jax-ml/jax #36927`,
`google-deepmind/mujoco#2957`. Dates beside measured figures stay allowed too; only a heading
that starts a dated log entry is flagged.
"""

from __future__ import annotations

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Numbered work units of this project: "session 20", "sessions 78-79", "stop 65's CI",
# "round 3", "issue 9's tasks", "issues 8 and 9", "issue #12".
_NUMBERED = re.compile(r"\b(?:sessions?|stops?|rounds?|issues?)\s+#?\d+", re.IGNORECASE)
# Ordinal work sessions: "the second session", "this session".
_ORDINAL = re.compile(
    r"\b(?:first|second|third|fourth|fifth|next|previous|last|this)\s+session\b", re.IGNORECASE
)
# A Markdown heading that opens a dated entry: "## 2026-11-22: first session".
_DATED_HEADING = re.compile(r"^#{1,6}\s.*\b\d{4}-\d{2}-\d{2}\b", re.MULTILINE)
# Citations of the retired diaries. Spelt in pieces so that this file does not match itself.
_DIARY = re.compile(r"\b(?:" + "NOTES" + r"|" + "BENCHMARKS" + r"|" + "RENDERING" + r")\.md\b")
# An upstream project's issue or commit: "owner/name #123", "owner/name#123".
_UPSTREAM = re.compile(r"[\w.-]+/[\w.-]+\s?#\d+")

# Files that may name the retired diaries: the changelog records their removal.
_MAY_NAME_DIARIES = {"CHANGELOG.md"}
_SELF = "tests/test_history.py"
_NOTES = "NOTES" + ".md"  # in pieces, so that a grep for the diaries' names passes this file by


def problems(text: str, *, markdown: bool = False, may_name_diaries: bool = False) -> list[str]:
    """The work-history references in `text`, one description per match.

    Args:
      text: the contents of a file.
      markdown: whether `text` is Markdown (dated headings are checked there only).
      may_name_diaries: whether the retired diaries may be named (the changelog).

    Returns:
      "line N: ..." for each match, in order.
    """
    found = []
    in_code = False  # inside a fenced code block, "#" starts a comment, not a heading
    for number, line in enumerate(text.splitlines(), start=1):
        if markdown and line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
        cleaned = _UPSTREAM.sub("", line)
        for pattern in (_NUMBERED, _ORDINAL):
            for match in pattern.finditer(cleaned):
                found.append(f"line {number}: {match.group(0)!r}")
        if not may_name_diaries:
            for match in _DIARY.finditer(line):
                found.append(f"line {number}: cites {match.group(0)}")
        if markdown and not in_code and _DATED_HEADING.match(line):
            found.append(f"line {number}: dated heading {line.strip()!r}")
    return found


@pytest.mark.parametrize(
    "text",
    [
        "With PPO's staggered episodes (session 20) it scored 999.6.",
        "# Records before session 9 compared twin environments within one batch.",
        "Solver caps for issue 9's contact extras",
        "the full tier passes for all 43 tasks of issues 8 and 9",
        "stop 60's CI failure",
        "Round 3 of the review",
        "sessions 78-79",
        "as the second session found",
        f"(see {_NOTES})",
        "BENCHMARKS" + '.md, "Solver caps"',
    ],
)
def test_the_pattern_finds_work_history(text):
    assert problems(text)


@pytest.mark.parametrize(
    "text",
    [
        "jax-ml/jax #36927; reverted upstream in jax-ml/jax@859992407d",
        "This is the known jax-ml/jax#33761 (google-deepmind/mujoco#2957).",
        "Measured 2026-11-24, x86_64, 2 CPUs, jax 0.10.2",
        "@pytest.fixture(scope='session')",
        "a soak shard that a working session on one core cannot finish",
        "MJX's solver caps (docs/design/solver-caps.md)",
    ],
)
def test_the_pattern_passes_the_present_tense(text):
    assert not problems(text)


def test_a_dated_log_heading_is_found_in_markdown_only():
    assert problems("## 2026-11-22: first session (foundation)", markdown=True)
    assert problems("### Current figures, 2026-11-22\n", markdown=True)
    assert not problems("Measured 2026-11-22 on the 2-core CPU.", markdown=True)
    assert not problems("# 2026-11-22 is a date in a comment")
    assert not problems("```bash\n# measured 2026-11-22\nls\n```\n", markdown=True)
    assert problems("```bash\nls\n```\n## 2026-11-22: a log entry\n", markdown=True)


def test_the_changelog_may_name_the_retired_diaries():
    assert not problems(f"- `{_NOTES}` is gone.", may_name_diaries=True)
    assert problems(f"- `{_NOTES}` is gone.")


def _tracked_text_files() -> list[str]:
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [name for name in listing.decode().split("\0") if name and name != _SELF]


def test_the_tracked_tree_has_no_work_history():
    found = []
    for name in _tracked_text_files():
        path = ROOT / name
        try:
            data = path.read_bytes()
        except OSError:  # listed but absent (deleted in the working tree)
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        found += [
            f"{name}: {problem}"
            for problem in problems(
                text,
                markdown=name.endswith(".md"),
                may_name_diaries=name in _MAY_NAME_DIARIES,
            )
        ]
    assert not found, "work-history references (say what is true now):\n" + "\n".join(found)
