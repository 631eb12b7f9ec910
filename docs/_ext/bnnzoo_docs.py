"""Sphinx extension of the bnnzoo docs: pages generated from files outside ``docs/`` at the start of each build.

* ``docs/gallery/*.ipynb``: copies of ``notebooks/*.ipynb`` (stored without outputs; myst-nb executes them).
* ``docs/bench_results/``: ``benchmarks/README.md``'s index of current results, with each result file it links
  rendered as its own page (``index.md`` is included by ``docs/benchmarks.md``).
* ``docs/repro_results/``: the result pages rendered from ``reproduce/results/*.json`` (the reproduction page links
  and lists them).

Both folders are build products (ignored by git); a file is rewritten only when its content changed, so an
incremental build does not re-execute unchanged notebooks.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

LINK = re.compile(r"\]\(((?!https?:)[^)#\s]+\.md)\)")
ANY_LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")
DOCSTRING_OF = re.compile(r"docstring of ([\w.]+)")


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _page_name(rel: str) -> str:
    return rel.replace("/", "__")


def copy_notebooks(root: Path, docs: Path) -> None:
    """Copy every notebook of ``notebooks/`` into ``docs/gallery/`` and drop copies whose source is gone."""
    src = sorted((root / "notebooks").glob("*.ipynb"))
    dest = docs / "gallery"
    dest.mkdir(exist_ok=True)
    for nb in src:
        _write(dest / nb.name, nb.read_text(encoding="utf-8"))
    names = {nb.name for nb in src}
    for old in dest.glob("*.ipynb"):
        if old.name not in names:
            old.unlink()


def render_benchmarks(root: Path, docs: Path) -> None:
    """Render ``benchmarks/README.md`` and the result files it links into ``docs/bench_results/``.

    Raises
    ------
    FileNotFoundError
        If the index links a result file that does not exist.
    """
    bench = root / "benchmarks"
    index = (bench / "README.md").read_text(encoding="utf-8")
    dest = docs / "bench_results"
    dest.mkdir(exist_ok=True)
    linked = []
    for rel in LINK.findall(index):
        path = (bench / rel).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"benchmarks/README.md links {rel}, which does not exist")
        linked.append(rel)
        _write(dest / f"{_page_name(rel)}", path.read_text(encoding="utf-8"))

    def relink(m: re.Match) -> str:
        return f"]({_page_name(m.group(1))})"

    def unlink_folders(m: re.Match) -> str:  # a link to a folder or other file becomes its text
        target = m.group(2)
        return m.group(0) if target.endswith(".md") or target.startswith(("http:", "https:")) else m.group(1)

    body = ANY_LINK.sub(unlink_folders, LINK.sub(relink, index))
    # The index's own title is replaced by the benchmarks page's.
    body = re.sub(r"\A# [^\n]*\n", "", body)
    toctree = "\n```{toctree}\n:hidden:\n\n" + "\n".join(_page_name(r)[:-3] for r in dict.fromkeys(linked)) + "\n```\n"
    _write(dest / "index.md", "# Current results\n" + body + toctree)
    keep = {"index.md"} | {_page_name(r) for r in linked}
    for old in dest.glob("*.md"):
        if old.name not in keep:
            old.unlink()


def render_reproduce_results(root: Path, docs: Path) -> None:
    """Render every ``reproduce/results/*.json`` into ``docs/repro_results/<stem>.md`` (``reproduce.render``, the one
    renderer of the result pages) and drop pages whose result file is gone."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from reproduce import render

    render.write_result_pages(docs / "repro_results", root / "reproduce" / "results")


class LenientDocstrings(logging.Filter):
    """Drop docutils messages raised while parsing the docstrings of the modules in ``lenient_modules``.

    Only messages of type ``docutils`` whose location names "docstring of <object>" with the object in one of those
    modules are dropped (counted and listed at the end of the build); every other warning still fails ``-W``.
    """

    def __init__(self, modules):
        super().__init__()
        self.modules = tuple(modules)
        self.dropped: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "type", "") != "docutils" or not self.modules:
            return True
        m = DOCSTRING_OF.search(str(getattr(record, "location", "")))
        if m is None:
            return True
        obj = m.group(1)
        if any(obj == mod or obj.startswith(mod + ".") for mod in self.modules):
            self.dropped[obj] = self.dropped.get(obj, 0) + 1
            return False
        return True


_FILTER = LenientDocstrings(())


def _on_config_inited(app, config) -> None:
    _FILTER.modules = tuple(config.bnnzoo_lenient_docstrings)
    from sphinx.util.logging import NAMESPACE, WarningStreamHandler

    for handler in logging.getLogger(NAMESPACE).handlers:
        if isinstance(handler, WarningStreamHandler) and _FILTER not in handler.filters:
            handler.filters.insert(0, _FILTER)


def _on_build_finished(app, exception) -> None:
    if _FILTER.dropped:
        from sphinx.util import logging as sphinx_logging

        objs = ", ".join(sorted(_FILTER.dropped))
        sphinx_logging.getLogger(__name__).info(
            f"bnnzoo_docs: {sum(_FILTER.dropped.values())} docutils messages in docstrings of modules listed in "
            f"bnnzoo_lenient_docstrings were not counted as warnings: {objs}")


def _on_builder_inited(app) -> None:
    docs = Path(app.srcdir)
    root = docs.parent
    copy_notebooks(root, docs)
    render_benchmarks(root, docs)
    render_reproduce_results(root, docs)


def setup(app):
    app.add_config_value("bnnzoo_lenient_docstrings", [], "env")
    app.connect("config-inited", _on_config_inited)
    app.connect("builder-inited", _on_builder_inited)
    app.connect("build-finished", _on_build_finished)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
