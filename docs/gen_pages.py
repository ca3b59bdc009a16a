"""Generate every page of the site from the workspace (run by mkdocs-gen-files; see tools/docs.py)."""

import sys
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from docs import site_pages  # noqa: E402 - tools/ is not a package

files, summary = site_pages(ROOT)
for path, content in files.items():
    with mkdocs_gen_files.open(path, "wb") as handle:
        handle.write(content)
with mkdocs_gen_files.open("SUMMARY.md", "w") as handle:
    handle.write(summary)
