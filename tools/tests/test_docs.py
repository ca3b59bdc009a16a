"""The documentation site: generated pages, the strict build and the browser check (tools/docs.py)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import docs

ROOT = Path(__file__).resolve().parents[2]


def test_every_member_has_guide_api_reproduction_and_changelog():
    files, summary = docs.site_pages(ROOT)
    home = files["index.md"].decode()
    for member in docs.doc_members(ROOT):
        for page in ("index", "api", "reproduction", "changelog"):
            assert f"{member.slug}/{page}.md" in files, (member.dist, page)
            assert f"]({member.slug}/{page}.md)" in summary
        assert f"[{member.dist}]({member.slug}/index.md)" in home  # the home page's table links it
        api = files[f"{member.slug}/api.md"].decode()
        names = [n for n in docs.public_names(member) if not n.startswith("__")]
        expected = names or docs.public_submodules(member)
        assert expected, member.dist
        for name in expected:
            assert f"::: {member.module}.{name}\n" in api


def test_readme_links_resolve_inside_the_site():
    files, _ = docs.site_pages(ROOT)
    for path, content in files.items():
        if not path.endswith(".md"):
            continue
        text = content.decode()
        for _, _, target in docs.markdown_links(text):
            if target.startswith(("http://", "https://", "#", "mailto:")):
                continue
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), target.split("#")[0]))
            assert resolved in files, f"{path}: link {target} -> {resolved} is not in the site"


def test_code_spans_and_fences_hold_no_links():
    text = "a `C[C@H](N)C(=O)O` b ``x [y](z) x`` [real](a.md) [`code.py`](c.py)\n```\n[fenced](b.md)\n```\n"
    assert docs.markdown_links(text) == [("", "real", "a.md"), ("", "`code.py`", "c.py")]
    pages = docs.PageSet(ROOT, docs.doc_members(ROOT)[:1])
    assert pages.rewrite("`[C@H](N)`", ROOT / "shared", "shared/index.md") == "`[C@H](N)`"


def test_a_link_to_a_missing_file_is_left_for_the_strict_build():
    pages = docs.PageSet(ROOT, docs.doc_members(ROOT)[:1])
    text = pages.rewrite("see [the study](studies/nowhere.md) and [home](https://example.org)", ROOT / "shared",
                         "shared/index.md")
    assert text == "see [the study](studies/nowhere.md) and [home](https://example.org)"


def minimal_copy(root: Path) -> Path:
    """The files a shared-only site needs: mkdocs.yml, docs/, tools/, the root README and shared/."""
    for name in ("mkdocs.yml", "LICENSE"):
        shutil.copyfile(ROOT / name, root / name)
    rows = (ROOT / "README.md").read_text().splitlines()  # the package table without the absent packages
    (root / "README.md").write_text("\n".join(r for r in rows if not r.startswith("| [") or "](shared)" in r))
    for folder in ("docs", "tools", "shared"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (root / "packages").mkdir()
    return root


def build(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true")
    return subprocess.run([sys.executable, "tools/docs.py", "build", "--site", str(root / "site")], cwd=root,
                          capture_output=True, text=True, env=env)


def test_strict_build_passes_and_fails_on_a_planted_broken_reference(tmp_path):
    pytest.importorskip("mkdocs")
    root = minimal_copy(tmp_path)
    done = build(root)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert (root / "site" / "shared" / "api" / "index.html").exists()
    readme = root / "shared" / "README.md"
    readme.write_text(readme.read_text() + "\nSee [the missing guide](docs/missing.md).\n")
    done = build(root)
    assert done.returncode != 0
    assert "docs/missing.md" in done.stdout + done.stderr


@pytest.fixture(scope="module")
def chromium():
    pytest.importorskip("playwright")
    found = docs.find_chromium()
    if found is None:
        pytest.skip("no Chromium (`python tools/dev.py test --install-browser` unpacks one from the npm registry)")
    return found


PNG_1x1 = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a5e1"
                        "4d5b0000000049454e44ae426082")


def plant_site(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pixel.png").write_bytes(PNG_1x1)
    (folder / "index.html").write_text(f"<html><head><title>t</title></head><body>{body}</body></html>")
    return folder


def test_browser_check_passes_a_good_page(tmp_path, chromium):
    site = plant_site(tmp_path / "site", '<p>fine</p><img src="pixel.png"><pre>&gt;&gt;&gt; f()\n'
                      "Traceback (most recent call last):\nValueError: shown by a doctest</pre>")
    (report,) = docs.check_pages(site, [("index.html", 0)], tmp_path / "shots", chromium=chromium)
    assert report.problems == []
    assert report.screenshot.stat().st_size > 0


def test_browser_check_fails_on_a_traceback_and_a_broken_image(tmp_path, chromium):
    site = plant_site(tmp_path / "site", '<pre>Traceback (most recent call last):\n  File "x.py", line 1\n'
                      'KeyError: 1</pre><img src="missing.png">')
    (report,) = docs.check_pages(site, [("index.html", 0)], tmp_path / "shots", chromium=chromium)
    assert "shows a Python traceback" in report.problems
    assert "broken image missing.png" in report.problems


def test_browser_check_fails_on_an_empty_api_section(tmp_path, chromium):
    site = plant_site(tmp_path / "site", '<div class="doc doc-object"><h2 class="doc-heading">f</h2>'
                      '<div class="doc-contents"></div></div>')
    (report,) = docs.check_pages(site, [("index.html", 2)], tmp_path / "shots", chromium=chromium)
    assert "API section lists 1 objects, 2 expected" in report.problems
    assert "empty API entry f" in report.problems


def test_home_page_has_one_short_row_per_package_and_the_install_lines_in_one_block():
    import checks

    files, summary = docs.site_pages(ROOT)
    home = files["index.md"].decode()
    rows = [line for line in home.splitlines() if line.startswith("| [")]
    assert len(rows) == len(docs.doc_members(ROOT))
    assert all(len(line.split(" | ")[1]) <= 60 for line in rows)  # the verdict only, not the measurements
    assert f'<div class="{docs.PACKAGE_TABLE_CLASS}" markdown>' in home  # styled: names never break
    block = home.split("```bash\n", 1)[1].split("```", 1)[0]
    for member in checks.workspace(ROOT)[1:]:
        assert f"{checks.install_line(member)}" in block and f"# {member.dist}\n" in block
    assert "pip install" not in "\n".join(rows)  # commands live in the code block, which scrolls
    assert docs.short_status("partly: a, b: c") == "partly" and docs.short_status("x" * 80).endswith("...")
    # grouped navigation: shared, then every package inside one "Packages" section, each with its 4 pages
    assert summary.splitlines()[2] == "* icml25-shared" and "* Packages" in summary
    assert "\n    * fastpd\n        * [Guide](packages/fastpd/index.md)\n" in summary


HOME_OK = {"problems": [], "rows": 3, "commands": 2, "visible": ["Home", "Architecture", "icml25-shared", "Packages"],
           "groups": ["icml25-shared", "Packages", "a-pkg", "b-pkg"], "open": 0, "menuShown": True,
           "pageWidth": 1280, "viewport": 1280}


def test_home_problems_reads_the_probe():
    assert docs.home_problems(HOME_OK, 1280, ["a-pkg", "b-pkg"]) == []
    bad = dict(HOME_OK, problems=["a-pkg: cell 1 overflows (120 > 90 px)"], rows=2, commands=1, open=1,
               visible=[*HOME_OK["visible"], "Guide", "API"], groups=["Packages", "a-pkg"], pageWidth=1400)
    assert docs.home_problems(bad, 1280, ["a-pkg", "b-pkg"]) == [
        "a-pkg: cell 1 overflows (120 > 90 px)", "the package table has 2 rows, 3 expected",
        "the install block holds 1 pip commands, 2 expected", "the page is 1400 px wide in a 1280 px window",
        "the side menu has no group for b-pkg", "1 side-menu group(s) start expanded on the home page",
        "the side menu shows 2 package page link(s) before any group is opened"]
    phone = dict(HOME_OK, menuShown=False, viewport=390, pageWidth=390)
    assert docs.home_problems(phone, 390, ["a-pkg", "b-pkg"]) == []  # the menu is a drawer there
    assert docs.home_problems(phone, 1280, ["a-pkg", "b-pkg"]) == ["no side menu is shown at a desktop width"]


def test_chromium_is_found_where_install_browser_puts_it_or_where_named(tmp_path, monkeypatch):
    binary = tmp_path / "venv" / "chromium" / "chromium"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    monkeypatch.setenv("ICML25_VENV", str(tmp_path / "venv"))
    monkeypatch.setattr(docs, "CHROMIUM_CANDIDATES", ())
    monkeypatch.setattr(docs.shutil, "which", lambda name: None)
    assert docs.find_chromium() == str(binary)
    monkeypatch.setenv("ICML25_CHROMIUM", str(tmp_path / "elsewhere"))
    assert docs.find_chromium() is None  # a named browser that is missing is not silently replaced
    monkeypatch.setenv("ICML25_CHROMIUM", str(binary))
    assert docs.find_chromium() == str(binary)


HOME_PAGE = """<html><head><style>
  td {{ border: 1px solid; }} pre > code {{ display: block; white-space: {ws}; overflow-x: auto; }}
  .md-sidebar--primary {{ display: none; }}
</style></head><body>
<div class="icml25-packages"><table><thead><tr><th>package</th><th>status</th></tr></thead><tbody>
<tr><td style="width: {cell}px"><a href="a/">a-package-with-a-long-name</a></td><td>works</td></tr>
<tr><td><a href="b/">b</a></td><td>partly</td></tr><tr><td><a href="c/">c</a></td><td>partly</td></tr>
</tbody></table></div>
<pre><code>pip install ./shared "./packages/a-package-with-a-long-name[cli,extra-one,extra-two,extra-three]"  # a
pip install ./shared "./packages/b[cli]"  # b</code></pre></body></html>"""


def test_home_layout_check_in_the_browser(tmp_path, chromium):
    good = tmp_path / "good"
    good.mkdir()
    (good / "index.html").write_text(HOME_PAGE.format(ws="pre", cell=400))
    reports = docs.check_home(good, tmp_path / "shots", chromium=chromium, packages=["b", "c"], widths=(390,))
    assert [r.problems for r in reports] == [[]]
    assert reports[0].screenshot.stat().st_size > 0
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "index.html").write_text(HOME_PAGE.format(ws="pre-wrap", cell=40))
    (report,) = docs.check_home(bad, tmp_path / "shots", chromium=chromium, packages=["b", "c"], widths=(390,))
    assert any("breaks over" in p for p in report.problems) or any("overflows" in p for p in report.problems)
    assert any(p.startswith("the install block wraps") for p in report.problems), report.problems
    assert any(p.startswith("the install block's 2 lines are drawn as") for p in report.problems), report.problems
