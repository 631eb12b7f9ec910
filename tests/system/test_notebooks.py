"""The notebooks are stored clean and in sync with their scripts.

Notebooks are stored without outputs as ``notebooks/*.ipynb``, paired with a jupytext percent script
(``notebooks/*.py``) that is the readable, diffable form.  They are executed top to bottom at CI size by the
documentation build (``sphinx-build -W --keep-going -b html docs docs/_build/html``, run by ``.ci/run``), where a
failing cell fails the build; they are not executed a second time here.
"""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

NOTEBOOKS = sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))


def test_notebooks_exist_and_are_clean():
    assert NOTEBOOKS, "no notebooks found"
    for nb_path in NOTEBOOKS:
        nb = nbformat.read(nb_path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, f"{nb_path.name} has stored outputs"
        assert nb_path.with_suffix(".py").exists(), f"{nb_path.name} has no paired .py script"


def test_notebooks_in_sync_with_scripts():
    """The .ipynb holds the same cells as its paired percent script (regenerate with ``jupytext --to ipynb X.py``)."""
    jupytext = pytest.importorskip("jupytext")
    for nb_path in NOTEBOOKS:
        stored = nbformat.read(nb_path, as_version=4)
        paired = jupytext.read(nb_path.with_suffix(".py"))
        got = [(c.cell_type, c.source.strip()) for c in stored.cells]
        want = [(c.cell_type, c.source.strip()) for c in paired.cells]
        assert got == want, f"{nb_path.name} is out of sync with {nb_path.with_suffix('.py').name}"
