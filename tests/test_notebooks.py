"""Every notebook runs top to bottom at CI size (its parameter cell's default), as users would run it.

Notebooks are stored without outputs as ``notebooks/*.ipynb``, paired with a jupytext percent script
(``notebooks/*.py``) that is the readable, diffable form; this test also checks the pair is in sync.
"""

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


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


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(nb_path, tmp_path):
    nb = nbformat.read(nb_path, as_version=4)
    env_before = os.environ.get("BNNZOO_NB_OUT")
    os.environ["BNNZOO_NB_OUT"] = str(tmp_path)
    try:
        client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                         resources={"metadata": {"path": str(nb_path.parent)}})
        client.execute()
    finally:
        if env_before is None:
            os.environ.pop("BNNZOO_NB_OUT", None)
        else:
            os.environ["BNNZOO_NB_OUT"] = env_before
