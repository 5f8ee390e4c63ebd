"""The documentation site, API reference included, builds with no warning.

`mkdocs build --strict` turns every warning into an error: a broken link between pages,
a page missing from the navigation, or a docstring that griffe cannot match to its
signature (an `Args:` entry naming a parameter the function does not have).
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _mkdocs() -> list[str]:
    beside = pathlib.Path(sys.executable).with_name("mkdocs")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("mkdocs")
    if found is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[test]')")
    return [found]


def test_the_docs_build_strictly_with_no_warning(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    result = subprocess.run(
        _mkdocs() + ["build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = result.stdout + result.stderr
    warnings = [line for line in log.splitlines() if re.match(r"\s*WARNING\b", line)]
    assert result.returncode == 0 and not warnings, log
    assert (tmp_path / "site" / "reference" / "jaxcontrol" / "index.html").exists()


def test_every_docs_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    missing = [p for p in pages if p not in nav]
    assert not missing, f"docs pages not in mkdocs.yml's nav: {missing}"


_CITATION = re.compile(r'(docs/[\w/.-]+?\.md)(?:,\s*"([^"]+)")?')


def _headings(page: pathlib.Path) -> set[str]:
    return {
        line.lstrip("#").strip()
        for line in page.read_text().splitlines()
        if line.startswith("#")
    }


def test_every_docs_page_that_the_code_cites_exists_with_its_section():
    listing = subprocess.run(
        ["git", "ls-files", "-z", "jaxcontrol", "tests", "benchmarks", "pyproject.toml"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    missing = []
    for name in filter(None, listing.split("\0")):
        path = ROOT / name
        if not path.is_file() or path.suffix not in {".py", ".md", ".toml", ".txt", ".sh"}:
            continue
        # A citation may wrap across comment lines: join them before matching.
        text = re.sub(r"\s*\n\s*(?:#\s*)?", " ", path.read_text())
        for page, section in _CITATION.findall(text):
            target = ROOT / page
            if not target.is_file():
                missing.append(f"{name}: {page}")
            elif section and section not in _headings(target):
                missing.append(f'{name}: {page}, "{section}"')
    assert not missing, "cited docs pages or sections that do not exist:\n" + "\n".join(missing)
