"""The environment of every test and of the notebooks under nbval, set before anything imports torch, whichever
of them pytest is asked for (``pytest notebooks/03_tte_layerscale.ipynb`` alone included):

- the smoke scale for the notebooks, whatever THESIS_PRESET the shell holds (the demo scale would reuse or retrain
  results/demo and redraw the committed figures);
- no progress bars, and a fresh data cache unless THESIS_DATA names one;
- a grid's runs trained in this process (THESIS_WORKERS=1: a spawned worker costs seconds of start-up against a
  smoke run's fraction of a second; the same bits either way, tests/test_study.py, which also runs the workers).
"""
import os
import tempfile

os.environ["THESIS_PRESET"] = "smoke"   # notebooks under nbval run at the smoke scale
os.environ.setdefault("THESIS_PROGRESS", "0")
os.environ.setdefault("THESIS_WORKERS", "1")     # the workers' path: the tests that set THESIS_WORKERS=2
os.environ.setdefault("THESIS_DATA", tempfile.mkdtemp(prefix="thesis-data-"))   # worlds, pretraining, caches


def pytest_collectstart(collector):
    # nbval: stderr (warnings, progress bars) is never compared
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("stderr",)


# The seven files that take longest (`pytest --durations=0` on 2 workers: 37-127 s each, a few seconds for most),
# collected first: `make test` hands whole files to its workers in collection order (--dist loadfile
# --no-loadscope-reorder), so that no long file starts while the other worker is already idle at the end.
FIRST = ("test_reliability.py", "test_distributed.py", "test_gpu_install.py", "test_rehearsal.py",
         "test_gpu_command.py", "test_study.py", "05_modality_mechanisms.ipynb")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))     # stable: the others keep their order
