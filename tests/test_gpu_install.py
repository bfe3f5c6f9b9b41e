"""benchmarks/gpu.sh's set-up, as it runs on a GPU host without a package index: a venv over the host's
site-packages, pip --no-index from a wheel folder, this repository installed editable. Here the test's own Python
stands in for the host's (its torch, timm, transformers, papermill, ipykernel are the host's packages) and the wheel
folder is made from what that Python has installed, without any network. benchmarks/gpu_wheels.sh refuses to
download where pip would resolve markers for another machine than the host.

The Makefile's two routes for a GPU machine, run on a stand-in project (this Makefile, a pyproject of the same
shape naming tiny stand-in wheels) against package indexes that are folders on disk, with every network address
made unreachable: `make setup TORCH_INDEX_URL=...` (torch and torchvision from that index, the rest from the
default index) and `make wheels` + `make setup WHEELS=...` (everything from the folder, the default index never
asked)."""
import base64
import ensurepip
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
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
    return write_wheel(path, {f.as_posix(): (base / f).read_bytes() for f in files}, info)


def write_wheel(path: Path, entries: dict, info: str) -> Path:
    """A wheel at ``path`` holding ``entries`` (name in the archive -> bytes) and the RECORD of their hashes."""
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        for name, data in entries.items():
            whl.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{name},sha256={digest},{len(data)}")
        whl.writestr(f"{info}/RECORD", "\n".join(record + [f"{info}/RECORD,,"]) + "\n")
    return path


def tiny_wheel(folder: Path, name: str, version: str, requires=(), module: str | None = None) -> Path:
    """A stand-in wheel: a package ``name`` whose ``__version__`` is ``version`` (plus ``module`` as its
    ``__main__``), depending on ``requires``."""
    info = f"{name}-{version}.dist-info"
    metadata = "\n".join(["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
                          *(f"Requires-Dist: {r}" for r in requires)]) + "\n"
    entries = {f"{name}/__init__.py": f"__version__ = {version!r}\n".encode(), f"{info}/METADATA": metadata.encode(),
               f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    if module:
        entries[f"{name}/__main__.py"] = module.encode()
    folder.mkdir(parents=True, exist_ok=True)
    return write_wheel(folder / f"{name}-{version}-py3-none-any.whl", entries, info)


def test_the_set_up_installs_from_the_wheel_folder_alone_and_imports_this_checkout(tmp_path):
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    wheels.mkdir()
    wheel_of_installed("setuptools", wheels)                     # what pip builds the editable install with
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")}
    env.update(PYTHON=sys.executable, WHEELS=str(wheels), GPU_VENV=str(venv), PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1", SETUP_VENV=str(tmp_path / "no-setup-venv"))
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
    (tmp_path / "probe.py").write_text("import sys, thesis_lib; print(thesis_lib.__file__); print(sys.prefix)\n")
    launched = subprocess.run([str(venv / "bin" / "torchrun"), "--standalone", "--nproc_per_node", "1", "probe.py"],
                              env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert launched.returncode == 0, launched.stderr      # its torchrun (the recipe's scripts call it) runs its python
    assert launched.stdout.split()[-2:] == [package, prefix]
    again = subprocess.run(["bash", str(SCRIPTS / "gpu.sh"), "--setup-only"], env=env, capture_output=True,
                           text=True, timeout=60)                # set up once: the second call installs nothing
    assert again.returncode == 0 and "set up" in again.stdout


def setup_venv(folder: Path, cuda: bool = True, hide: str = "") -> Path:
    """A stand-in for the venv `make setup` made: its python is this test's (which imports torch, this checkout's
    thesis_lib, papermill, pytest), its torch claiming a CUDA build (``cuda``), ``hide`` made unimportable."""
    site = folder / "site"
    site.mkdir(parents=True)
    (site / "sitecustomize.py").write_text(("import torch; torch.version.cuda = torch.version.cuda or '12.6'\n" if cuda
                                            else "import torch; torch.version.cuda = None\n")
                                           + (f"import sys; sys.modules[{hide!r}] = None\n" if hide else ""))
    (folder / "bin").mkdir()
    (folder / "bin" / "python").write_text(f'#!/bin/sh\nPYTHONPATH="{site}" exec "{sys.executable}" "$@"\n')
    (folder / "bin" / "python").chmod(0o755)
    return folder


def gpu_sh(env: dict, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPTS / "gpu.sh"), *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_gpu_sh_runs_from_make_setups_venv_when_it_has_cuda_torch_without_a_wheel_folder(tmp_path):
    """After `make setup TORCH_INDEX_URL=<CUDA index>` (+ pytest) no wheel folder is needed: the set-up is the venv
    as it is, nothing installed, and the commands run its python."""
    venv = setup_venv(tmp_path / "setup-venv")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "SETUP_VENV": str(venv),
           "GPU_VENV": str(tmp_path / "gpu-venv"), "WHEELS": str(tmp_path / "none"), "PYTHON": sys.executable}
    done = gpu_sh(env, "--setup-only")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"uses make setup's {venv} as it is" in done.stdout and "no wheel folder needed" in done.stdout
    assert not (tmp_path / "gpu-venv").exists() and not (tmp_path / "none").exists()
    shown = gpu_sh(env, "--rehearsal", "--help")                 # the command itself runs from that venv
    assert shown.returncode == 0 and "thesis_lib.full_scale.rehearsal" in shown.stdout, shown.stderr


@pytest.mark.parametrize("cuda, hide, said", [
    (False, "", "its torch 2"),                                        # a CPU-only build: `make setup` on a login node
    (True, "pytest", "it cannot import pytest"),                       # `make setup` alone: no pytest
    (True, "papermill", "it cannot import papermill"),
])
def test_gpu_sh_says_in_one_line_why_make_setups_venv_is_not_used(tmp_path, cuda, hide, said):
    venv = setup_venv(tmp_path / "setup-venv", cuda, hide)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "SETUP_VENV": str(venv),
           "GPU_VENV": str(tmp_path / "gpu-venv"), "WHEELS": str(tmp_path / "none"), "PYTHON": sys.executable}
    done = gpu_sh(env, "--setup-only")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "bash benchmarks/gpu_wheels.sh" in lines[0] and f"make setup's venv '{venv}' is not usable: " in lines[0]
    assert said in lines[0] and (cuda or "is not a CUDA build" in lines[0])
    assert not (tmp_path / "gpu-venv").exists()


def test_the_wheel_folder_is_for_the_hosts_python_and_gpu_sh_checks_it(tmp_path):
    """gpu_wheels.sh takes the Python version of the interpreter it runs with (the GPU host's; environment.yml's
    conda Python is another route) and records it in the folder; gpu.sh stops in one line on a host whose Python is
    another. Here pip downloads stand-ins of the five packages from a local folder."""
    links = tmp_path / "links"
    for name in ("papermill", "ipykernel", "pytest", "setuptools", "wheel"):
        tiny_wheel(links, name, "1.0")
    wheels = tmp_path / "wheels"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PY_VERSION"}
    env.update(PYTHON=sys.executable, WHEELS=str(wheels), PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links),
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1", PIP_CONFIG_FILE=os.devnull)
    made = subprocess.run(["bash", str(SCRIPTS / "gpu_wheels.sh")], env=env, capture_output=True, text=True,
                          timeout=120)
    here = "%d.%d" % sys.version_info[:2]
    assert made.returncode == 0, made.stdout + made.stderr
    assert (wheels / "python-version").read_text().strip() == here and len(list(wheels.glob("*.whl"))) == 5
    assert f"wheels for CPython {here}" in made.stdout
    (wheels / "python-version").write_text("3.99\n")                  # made for another host
    env.update(GPU_VENV=str(tmp_path / "gpu-venv"), SETUP_VENV=str(tmp_path / "no-setup-venv"))
    done = gpu_sh(env, "--setup-only")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert f"holds wheels for Python 3.99 ({wheels}/python-version), this host's {sys.executable} is {here}" in lines[0]
    assert not (tmp_path / "gpu-venv").exists()


@pytest.mark.parametrize("target", ["3.9", "3.99"])
def test_the_wheel_script_refuses_to_resolve_markers_for_another_python_than_the_host(tmp_path, target):
    env = {**os.environ, "PYTHON": sys.executable, "PY_VERSION": target, "WHEELS": str(tmp_path / "w"),
           "PIP_NO_INDEX": "1"}
    done = subprocess.run(["bash", str(SCRIPTS / "gpu_wheels.sh")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "pypa/pip#11664" in done.stderr and f"python{target}" in done.stderr
    assert not (tmp_path / "w").exists()


# ---- the Makefile's routes, on a stand-in project -------------------------------------------------------------------

KERNEL = """import os, sys
open(os.path.join(os.environ["HOME"], "kernel.txt"), "w").write(" ".join(sys.argv[1:]) + " " + sys.prefix)
"""                                                    # the stand-in ipykernel: records `make setup`'s kernel step


def simple_index(folder: Path, wheels: list[Path]) -> str:
    """A package index in a folder (PEP 503: one page per project) serving ``wheels``; its file:// address."""
    for wheel in wheels:
        project = folder / wheel.name.split("-")[0].lower().replace("_", "-")
        project.mkdir(parents=True, exist_ok=True)
        shutil.copy(wheel, project)
        links = "".join(f'<a href="{w.name}">{w.name}</a>\n' for w in sorted(project.glob("*.whl")))
        (project / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
    return folder.as_uri() + "/"


def stand_in(tmp: Path) -> tuple[Path, dict]:
    """A project of this pyproject's shape (its torch requirement, torchvision, one dependency, the notebooks and dev
    extras), named thesis_lib; "PyPI" (torch 2.6.0: the build PyPI serves) and a "CUDA index" (torch 2.5.0+cu126)
    as folders; an environment in which every network address is unreachable and no pip configuration is read."""
    project = tmp / "project"
    (project / "thesis_lib").mkdir(parents=True)
    (project / "thesis_lib" / "__init__.py").write_text("")
    torch_line = next(line for line in (ROOT / "pyproject.toml").read_text().splitlines()
                      if re.match(r' *"torch[<>=~!]', line))
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "thesis_lib"\nversion = "0.1.0"\ndependencies = [\n{torch_line}\n    "torchvision",\n'
        '    "tinydep",\n]\n\n[project.optional-dependencies]\nnotebooks = ["ipykernel"]\ndev = ["devdep"]\n\n'
        '[tool.setuptools]\npackages = ["thesis_lib"]\n')
    made = tmp / "made"
    pypi = [tiny_wheel(made, "torch", "2.6.0"), tiny_wheel(made, "torchvision", "0.21.0", ["torch==2.6.0"]),
            tiny_wheel(made, "tinydep", "1.0"), tiny_wheel(made, "devdep", "1.0"),
            tiny_wheel(made, "ipykernel", "6.0", module=KERNEL), wheel_of_installed("setuptools", made),
            next(Path(ensurepip.__file__).parent.glob("_bundled/pip-*.whl"))]   # the venv's own pip: no upgrade
    cuda = [tiny_wheel(made / "cu126", "torch", "2.5.0+cu126"),
            tiny_wheel(made / "cu126", "torchvision", "0.20.0+cu126", ["torch==2.5.0+cu126"])]
    dead = "http://127.0.0.1:9"                                  # the discard port: nothing answers
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))
           and k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=simple_index(tmp / "pypi", pypi), PIP_RETRIES="0",
               PIP_TIMEOUT="5", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1", HOME=str(tmp / "home"),
               http_proxy=dead, https_proxy=dead, HTTP_PROXY=dead, HTTPS_PROXY=dead, PYTHON=sys.executable)
    (tmp / "home").mkdir()
    return project, {"env": env, "cuda": simple_index(tmp / "cu126-index", cuda), "made": made}


def make(project: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(["make", "-f", str(ROOT / "Makefile"), "-C", str(project), *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cannot be reached" not in done.stdout + done.stderr      # no index was probed
    return done


def installed(venv: Path, env: dict) -> dict:
    probe = ("import json, torch, torchvision, tinydep, thesis_lib; print(json.dumps({'torch': torch.__version__, "
             "'torchvision': torchvision.__version__, 'tinydep': tinydep.__version__, "
             "'package': thesis_lib.__file__}))")
    seen = subprocess.run([str(venv / "bin" / "python"), "-c", probe], env=env, capture_output=True, text=True,
                          cwd=venv, timeout=60)                # (not this checkout's thesis_lib, in the current folder)
    assert seen.returncode == 0, seen.stderr
    return json.loads(seen.stdout)


def test_make_setup_takes_torch_from_the_index_the_user_names_and_the_rest_from_pypi(tmp_path):
    """torch and torchvision from TORCH_INDEX_URL although "PyPI" serves a newer torch; the package's dependency from
    "PyPI"; the kernel registered. The same index again changes nothing; another index replaces the venv's torch."""
    project, s = stand_in(tmp_path)
    venv = tmp_path / "venv"
    make(project, s["env"], "setup", f"VENV={venv}", f"TORCH_INDEX_URL={s['cuda']}")
    assert installed(venv, s["env"]) == {"torch": "2.5.0+cu126", "torchvision": "0.20.0+cu126", "tinydep": "1.0",
                                         "package": str(project / "thesis_lib" / "__init__.py")}
    assert (tmp_path / "home" / "kernel.txt").read_text().startswith("install --user --name thesis-tte")
    again = make(project, s["env"], "setup", f"VENV={venv}", f"TORCH_INDEX_URL={s['cuda']}")
    assert f"{venv}/bin/pip" not in again.stdout                      # set up: nothing installed again
    cu128 = simple_index(tmp_path / "cu128-index", [
        tiny_wheel(s["made"] / "cu128", "torch", "2.5.0+cu128"),
        tiny_wheel(s["made"] / "cu128", "torchvision", "0.20.0+cu128", ["torch==2.5.0+cu128"])])
    make(project, s["env"], "setup", f"VENV={venv}", f"TORCH_INDEX_URL={cu128}")
    assert installed(venv, s["env"])["torch"] == "2.5.0+cu128"


def test_a_login_node_without_nvidia_smi_gets_the_cuda_build_it_names(tmp_path):
    """Where no `nvidia-smi` is found (a cluster's login node), `make setup` alone takes the CPU-only torch and says
    how to name the CUDA build; with TORCH_INDEX_URL it installs torch from that index, the CPU one never asked."""
    project, s = stand_in(tmp_path)
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if d and not (Path(d) / "nvidia-smi").exists())
    env = {**s["env"], "PATH": path}
    cuda = "https://download.pytorch.org/whl/cu126"

    def planned(*args):
        done = subprocess.run(["make", "-n", "-f", str(ROOT / "Makefile"), "-C", str(project), "setup",
                               f"VENV={tmp_path / 'venv'}", *args], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout
    plain = planned()
    assert "--index-url https://download.pytorch.org/whl/cpu" in plain
    assert "no nvidia-smi here: a CPU-only torch. To set up a venv for GPU nodes here (a login node), name their " \
           f"CUDA build: make setup TORCH_INDEX_URL={cuda}" in plain
    named = planned(f"TORCH_INDEX_URL={cuda}")
    assert f"--index-url {cuda} " in named and "whl/cpu" not in named and "no nvidia-smi" not in named


def test_make_wheels_then_make_setup_from_the_folder_alone(tmp_path):
    """`make wheels` (torch pinned to the CUDA index's build) makes a folder with every wheel the package, its
    extras, pip and setuptools need, and none of the project itself; `make setup WHEELS=` and the dev extra install
    from it into a fresh venv while the default index offers newer versions of everything (never taken)."""
    project, s = stand_in(tmp_path)
    wheels, venv = tmp_path / "carried" / "wheels", tmp_path / "offline"
    early = subprocess.run(["make", "-f", str(ROOT / "Makefile"), "-C", str(project), "setup", f"VENV={venv}",
                            f"WHEELS={wheels}"], env=s["env"], capture_output=True, text=True, timeout=300)
    assert early.returncode != 0 and f"holds no wheels: make the folder where PyPI can be reached with 'make " \
                                     f"wheels WHEELS={wheels}'" in early.stderr
    make(project, s["env"], "wheels", f"VENV={tmp_path / 'online'}", f"WHEELS={wheels}",
         f"TORCH_INDEX_URL={s['cuda']}")
    names = sorted("-".join(w.name.split("-")[:2]) for w in wheels.iterdir())
    assert [n for n in names if not n.startswith(("pip-", "setuptools-"))] == [
        "devdep-1.0", "ipykernel-6.0", "tinydep-1.0", "torch-2.5.0+cu126", "torchvision-0.20.0+cu126"]
    assert any(n.startswith("pip-") for n in names) and any(n.startswith("setuptools-") for n in names)
    newer = [tiny_wheel(s["made"] / "newer", name, "9.0") for name in ("torch", "torchvision", "tinydep", "devdep")]
    env = {**s["env"], "PIP_INDEX_URL": simple_index(tmp_path / "newer-index", newer)}
    make(project, env, "setup", f"{venv}/bin/.installed-dev", f"VENV={venv}", f"WHEELS={wheels}")
    assert installed(venv, env) == {"torch": "2.5.0+cu126", "torchvision": "0.20.0+cu126", "tinydep": "1.0",
                                    "package": str(project / "thesis_lib" / "__init__.py")}
    assert subprocess.run([str(venv / "bin" / "python"), "-c", "import devdep, ipykernel"], env=env,
                          cwd=venv).returncode == 0

