"""thesis_lib.numerics: a block runs on one thread and the thread count comes back after it; the record of the machine
names vendor, kernels and torch; the model and data code use torch's own functions and layers (no module of
thesis_lib.models or thesis_lib.data imports numerics: docs/reproducibility.md)."""
import ast
import io

import pytest
import torch

from thesis_lib import numerics
from thesis_lib.paths import PACKAGE


def test_one_thread_inside_the_block_and_the_count_restored_after_it():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with numerics.one_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with pytest.raises(RuntimeError), numerics.one_thread():
            raise RuntimeError("an error inside")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_record_of_the_machine_names_vendor_kernels_and_torch():
    record = numerics.written_on()
    assert set(record) == {"cpu_vendor", "cpu_capability", "torch"}
    assert record["torch"] == torch.__version__ and record["cpu_vendor"]


def test_the_machine_of_a_result_names_the_cpu_by_family_and_model_and_a_gpu_only_where_used(monkeypatch):
    info = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n\n" \
           "processor\t: 1\nmodel name\t: another\n"
    real_open = open
    monkeypatch.setattr("builtins.open", lambda f, *a, **k: io.StringIO(info) if f == "/proc/cpuinfo"
                        else real_open(f, *a, **k))
    record = numerics.machine("cpu")
    assert (record["cpu"], record["cpu_vendor"], record["cpu_family"], record["cpu_model"]) == \
        ("AMD EPYC", "AuthenticAMD", "26", "2")
    assert "gpu" not in record and record["cpu_capability"] == torch.backends.cpu.get_cpu_capability()


def test_model_and_data_code_import_no_numerics_module():
    importers = []
    for path in sorted([*(PACKAGE / "models").rglob("*.py"), *(PACKAGE / "data").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module or ""] + [a.name for a in node.names] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any("numerics" in n for n in names):
                importers.append(path.name)
    assert importers == []
