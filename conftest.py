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
