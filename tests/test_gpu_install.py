"""benchmarks/gpu.sh's set-up, as it runs on a GPU host without a package index: a venv over the host's
site-packages, pip --no-index from a wheel folder, this repository installed editable. Here the test's own Python
stands in for the host's (its torch, timm, transformers, papermill, ipykernel are the host's packages) and the wheel
folder is made from what that Python has installed, without any network. benchmarks/gpu_wheels.sh refuses to
download where pip would resolve markers for another machine than the host."""
import base64
import hashlib
import importlib.metadata
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "benchmarks"


def wheel_of_installed(name: str, folder: Path) -> Path:
    """A wheel of an installed distribution, repacked from its files (with a RECORD of their hashes): the wheel folder
    gpu_wheels.sh would download, made from what this Python has."""
    dist = importlib.metadata.distribution(name)
    base = Path(dist.locate_file(""))
    files = [f for f in dist.files if "__pycache__" not in f.parts and not str(f).startswith("..")
             and f.name not in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")]
    info = next(f.parts[0] for f in dist.files if f.parts[0].endswith(".dist-info"))
    path = folder / f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        for f in files:
            data = (base / f).read_bytes()
            whl.writestr(str(f.as_posix()), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{f.as_posix()},sha256={digest},{len(data)}")
        whl.writestr(f"{info}/RECORD", "\n".join(record + [f"{info}/RECORD,,"]) + "\n")
    return path


def test_the_set_up_installs_from_the_wheel_folder_alone_and_imports_this_checkout(tmp_path):
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    wheels.mkdir()
    wheel_of_installed("setuptools", wheels)                     # what pip builds the editable install with
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")}
    env.update(PYTHON=sys.executable, WHEELS=str(wheels), GPU_VENV=str(venv), PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1")
    done = subprocess.run(["bash", str(SCRIPTS / "gpu.sh"), "--setup-only"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (venv / ".installed").exists() and "set up" in done.stdout
    probe = ("import thesis_lib, torch, papermill, ipykernel, sys; "
             "print(thesis_lib.__file__); print(sys.prefix)")
    seen = subprocess.run([str(venv / "bin" / "python"), "-c", probe], env=env, capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert seen.returncode == 0, seen.stderr
    package, prefix = seen.stdout.split()
    assert Path(package).resolve() == (ROOT / "thesis_lib" / "__init__.py").resolve()   # editable: this checkout
    assert Path(prefix).resolve() == venv.resolve()
    again = subprocess.run(["bash", str(SCRIPTS / "gpu.sh"), "--setup-only"], env=env, capture_output=True,
                           text=True, timeout=60)                # set up once: the second call installs nothing
    assert again.returncode == 0 and "set up" in again.stdout


@pytest.mark.parametrize("target", ["3.9", "3.99"])
def test_the_wheel_script_refuses_to_resolve_markers_for_another_python_than_the_host(tmp_path, target):
    env = {**os.environ, "PYTHON": sys.executable, "PY_VERSION": target, "WHEELS": str(tmp_path / "w"),
           "PIP_NO_INDEX": "1"}
    done = subprocess.run(["bash", str(SCRIPTS / "gpu_wheels.sh")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "pypa/pip#11664" in done.stderr and f"python{target}" in done.stderr
    assert not (tmp_path / "w").exists()
