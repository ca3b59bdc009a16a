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


VERSIONS = r"""
import json, os, sys
from hatchling.metadata.core import ProjectMetadata
from hatchling.plugin.manager import PluginManager
found, top = {}, os.getcwd()
for folder in sys.argv[1:]:
    os.chdir(os.path.join(top, folder))  # as a build does: hatch-vcs's root is relative to the project
    found[folder] = ProjectMetadata(os.getcwd(), PluginManager()).version
print(json.dumps(found))
"""


def versions(clone: Path, folders: list[str]) -> dict[str, str]:
    """Each member's version as hatchling (with hatch-vcs) computes it for a build of ``clone``."""
    import json

    done = subprocess.run([sys.executable, "-c", VERSIONS, *folders], cwd=clone, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def git(clone: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=clone, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tags_give_exact_versions_and_untagged_builds_no_local_segment(tmp_path):
    pytest.importorskip("hatch_vcs")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)  # HEAD: committed work only
    folders = release.member_folders(clone)
    dists = {folder: tomllib.loads((clone / folder / "pyproject.toml").read_text())["project"]["name"]
             for folder in folders}
    assert dists["shared"] == "icml25-shared" and len(folders) >= 2
    for tag in git(clone, "tag", "-l").split():  # a clone copies the tags: start untagged
        git(clone, "tag", "-d", tag)
    untagged = versions(clone, folders)
    # not the fallback-version (0.1.0): the version really comes from git
    assert all("+" not in v and v != "0.1.0" and ".dev" in v for v in untagged.values()), untagged
    for dist in dists.values():
        git(clone, "tag", f"{dist}-v0.1.0")
    assert versions(clone, folders) == dict.fromkeys(folders, "0.1.0")
    # a commit after the tag builds a dev version after it, still without a local segment
    (clone / "shared" / "README.md").write_text("changed\n")
    git(clone, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-am", "change")
    later = versions(clone, ["shared"])["shared"]
    assert "+" not in later and later.startswith("0.1.1.dev"), later
    # tags of one member do not leak into another's version
    assert release.resolve(f"{dists[folders[1]]}-v0.1.0", clone)["folder"] == folders[1]
