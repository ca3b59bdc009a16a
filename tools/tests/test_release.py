"""Release metadata: project URLs come from the root pyproject; tags give clean versions."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import release
from checks import tomllib

ROOT = Path(__file__).resolve().parents[2]
URL = "https://github.com/example-org/icml25"


@pytest.fixture()
def pyprojects(tmp_path):
    """A temp copy of the root pyproject and every member's pyproject (nothing else is read)."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for folder in release.member_folders(ROOT):
        (tmp_path / folder).mkdir(parents=True)
        shutil.copy(ROOT / folder / "pyproject.toml", tmp_path / folder / "pyproject.toml")
    return tmp_path


def set_repository(root: Path, url: str) -> None:
    path = root / "pyproject.toml"
    text = path.read_text()
    start = text.index("[tool.icml25]")
    line_start = text.index("repository =", start)
    line_end = text.index("\n", line_start)
    path.write_text(text[:line_start] + f'repository = "{url}"' + text[line_end:])
    assert release.repository(root) == url.rstrip("/").removesuffix(".git")


def urls(root: Path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "release.py"), "urls", mode, "--root", str(root)],
                          capture_output=True, text=True)


def test_the_repository_agrees_with_its_root_url():
    done = urls(ROOT, "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"urls: {len(release.member_folders(ROOT))} member(s)" in done.stdout


def test_expected_urls():
    assert release.expected_urls("", "packages/fastpd") is None
    assert release.expected_urls(URL, "packages/fastpd") == {
        "Homepage": URL, "Source": URL, "Issues": f"{URL}/issues",
        "Changelog": f"{URL}/blob/main/packages/fastpd/CHANGELOG.md"}


def test_write_then_remove_round_trip(pyprojects):
    before = {f: (pyprojects / f / "pyproject.toml").read_text() for f in release.member_folders(pyprojects)}
    set_repository(pyprojects, URL + ".git/")
    done = urls(pyprojects, "--check")
    assert done.returncode == 1
    assert "packages/fastpd/pyproject.toml:" in done.stdout and "expected" in done.stdout
    done = urls(pyprojects, "--write")
    assert done.returncode == 0, done.stdout + done.stderr
    assert urls(pyprojects, "--check").returncode == 0
    for folder, text in before.items():
        config = tomllib.loads((pyprojects / folder / "pyproject.toml").read_text())
        assert config["project"]["urls"] == release.expected_urls(URL, folder)
        old = tomllib.loads(text)
        config["project"].pop("urls")
        assert config == old, folder  # nothing else changed
    # an empty URL removes the tables again, restoring the files byte for byte
    set_repository(pyprojects, "")
    done = urls(pyprojects, "--check")
    assert done.returncode == 1 and "has a [project.urls] table but" in done.stdout
    assert urls(pyprojects, "--write").returncode == 0
    assert urls(pyprojects, "--check").returncode == 0
    for folder, text in before.items():
        assert (pyprojects / folder / "pyproject.toml").read_text() == text, folder


def test_rewrite_replaces_a_stale_table():
    text = '[project]\nname = "x"\n\n[project.urls]\nHomepage = "https://old"\n\n[tool.x]\na = 1\n'
    new = release.rewrite_urls(text, release.expected_urls(URL, "packages/x"))
    assert "https://old" not in new
    assert tomllib.loads(new)["project"]["urls"]["Issues"] == f"{URL}/issues"
    assert tomllib.loads(new)["tool"] == {"x": {"a": 1}}
    assert release.rewrite_urls(new, None) == '[project]\nname = "x"\n\n[tool.x]\na = 1\n'
    # a [project] table that ends the file
    last = release.rewrite_urls('[project]\nname = "x"', release.expected_urls(URL, "shared"))
    assert tomllib.loads(last)["project"]["urls"]["Changelog"] == f"{URL}/blob/main/shared/CHANGELOG.md"


def test_tag_resolution_still_works():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "release.py"), "fastpd-v0.2.0"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.splitlines() == [
        "dist=fastpd", "folder=packages/fastpd", "version=0.2.0"]
