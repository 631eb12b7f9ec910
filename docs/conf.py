"""Sphinx configuration of the bnnzoo documentation.

Build (from the repository root): ``sphinx-build -W --keep-going -b html docs docs/_build/html``.
The build executes the notebooks of ``notebooks/`` at their CI size (copied into ``docs/gallery/`` first) and renders
the benchmark index from ``benchmarks/README.md`` (``docs/_ext/bnnzoo_docs.py``).
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(DOCS / "_ext"))

# Notebook kernels inherit this environment: figures inline (CI exports MPLBACKEND=Agg, which would hide them),
# and the notebooks' saved PNGs go to the build folder instead of notebooks/figures.
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
os.environ.setdefault("BNNZOO_NB_OUT", str(DOCS / "_build" / "notebook_figures"))
Path(os.environ["BNNZOO_NB_OUT"]).mkdir(parents=True, exist_ok=True)

from importlib.metadata import PackageNotFoundError, version as _version  # noqa: E402

project = "bnnzoo"
author = "bnnzoo contributors"
copyright = "2026, bnnzoo contributors"
try:
    release = _version("bnnzoo")
except PackageNotFoundError:  # source tree on the path, not installed
    release = "0.2.0"
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinx.ext.mathjax",
    "bnnzoo_docs",
]

exclude_patterns = ["_build", "README.md", "**.ipynb_checkpoints", "gallery/*.py"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# MyST
myst_enable_extensions = ["dollarmath", "colon_fence", "substitution"]

# docs/faults.md (bad inputs and injected faults, with their outcomes) is written with the checkpoint and output code;
# until it exists the pages name it without a link, and the toctree entry for it is skipped without a warning.
HAVE_FAULTS = (DOCS / "faults.md").exists()
myst_substitutions = {
    "faults_page": "[Faults and bad inputs](faults.md)" if HAVE_FAULTS
    else "Faults and bad inputs (`docs/faults.md`, not part of this build)",
}
if not HAVE_FAULTS:
    exclude_patterns.append("faults.*")
    suppress_warnings = ["toc.excluded"]
myst_heading_anchors = 3

# Notebooks: executed at build time, each in its own kernel; a failing cell fails the build.  "cache" re-executes a
# notebook only when its code changed since the last build in docs/_build (a fresh clone executes all of them);
# BNNZOO_DOCS_EXECUTE=off skips execution (pages without outputs), =force re-executes everything.
nb_execution_mode = os.environ.get("BNNZOO_DOCS_EXECUTE", "cache")
nb_execution_cache_path = str(DOCS / "_build" / ".jupyter_cache")
nb_execution_timeout = 1800
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# autodoc + numpydoc
autodoc_typehints = "none"
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"bnnzoo {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path = []

# Docutils messages from the docstrings of the modules listed here would be listed at the end of the build instead of
# failing it (docs/_ext/bnnzoo_docs.py).  The list is empty: every docstring must parse without a warning.
bnnzoo_lenient_docstrings = []
