# One setup path, taken by every target on first use (Python ≥ 3.10 with pip, and make):
#   - .venv, then torch: where no NVIDIA GPU is found (no `nvidia-smi`), the CPU-only wheels from PyTorch's index
#     (TORCH_INDEX; a few hundred MB instead of several GB of CUDA wheels); where that index cannot be reached, pip
#     goes on and the package brings torch from PyPI. On a GPU machine, PyPI's CUDA build. `make … TORCH_INDEX=` skips it.
#   - the package with the `notebooks` extra (papermill, JupyterLab, ipykernel): all that `make demo` needs;
#   - the Jupyter kernel "Python (thesis-tte)", registered for this user (`make lab` starts it; any JupyterLab lists it);
#   - `make test`, `make verify` and `make golden` add the `dev` extra (pytest, nbval, the peers the tests compare with).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PRESET ?= demo
NOTEBOOKS := 00_notation 01_baseline 02_tte_before_encoders 03_tte_layerscale 04_layerscale_weights 05_modality_mechanisms
PAPERMILL := $(BIN)/papermill -k python3 --no-progress-bar
# the study prints one line per finished run to the terminal, not into the notebook (thesis_lib/study/runs.py: Log);
# --log-output echoes the notebook's own outputs there too
LOGGED := THESIS_PROGRESS=0 $(PAPERMILL) --log-output
KERNEL := thesis-tte
TORCH_INDEX ?= $(if $(shell command -v nvidia-smi 2>/dev/null),,https://download.pytorch.org/whl/cpu)
TORCH_SPEC := $(shell sed -n 's/^ *"\(torch[<>=~!][^"]*\)",.*/\1/p' pyproject.toml)

.PHONY: setup demo test verify golden pretrained reproduce long rehearsal figures lab clean-results

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch before the package, so that the package's own install finds it (no index reached: PyPI's, with the package)
# (the index is probed first: where it cannot be reached nothing is installed from it, so that pip never mixes a
# CPU-only torch found elsewhere with PyPI's torchvision, whose operators would then not load)
$(BIN)/.torch: | $(BIN)/python
	$(if $(TORCH_INDEX),if $(BIN)/python -c "import urllib.request as u; u.urlopen('$(TORCH_INDEX)/', timeout=10)" \
	    2>/dev/null; then $(BIN)/pip install --quiet --index-url $(TORCH_INDEX) "$(TORCH_SPEC)" torchvision; \
	    else echo "$(TORCH_INDEX) cannot be reached: torch comes from PyPI with the package"; fi)
	touch $@

$(BIN)/.installed: pyproject.toml | $(BIN)/.torch
	$(BIN)/pip install --quiet -e ".[notebooks]"
	touch $@

$(BIN)/.installed-dev: pyproject.toml | $(BIN)/.installed
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

$(BIN)/.kernel: $(BIN)/.installed
	$(BIN)/python -m ipykernel install --user --name $(KERNEL) --display-name "Python ($(KERNEL))"
	touch $@

setup: $(BIN)/.installed $(BIN)/.kernel

# The main job: notebook 03 (Table 2) at the embedded default, trained from scratch into build/demo/.
demo: setup
	mkdir -p build/demo
	$(LOGGED) notebooks/03_tte_layerscale.ipynb build/demo/03_tte_layerscale.ipynb -p output_dir build/demo

test: setup $(BIN)/.installed-dev
	$(BIN)/python -m pytest

# Retrain one committed demo run (seed 0) of each variant family: every metric within its declared tolerance of
# results/demo and every claim's verdict unchanged (docs/reproducibility.md; about 11 min on 2 cores; set THESIS_DATA
# to reuse the demo's prepared assets, THESIS_RESULTS to check another copy of the results).
verify: setup $(BIN)/.installed-dev
	THESIS_VERIFY_DEMO=1 $(BIN)/python -m pytest tests/test_reproducible.py -k demo -s

# Rewrite tests/golden/smoke_seed0.json: only on purpose (a change meant to alter the numbers).
golden: setup $(BIN)/.installed-dev
	$(BIN)/python tests/test_reproducible.py --update

# Rebuild the demo's pretrained stand-ins the package ships (thesis_lib/assets/pretrained-demo-*, ≈ 4 min): only on
# purpose (a change to the demo pretraining or what it depends on).
pretrained: setup
	$(BIN)/python -m thesis_lib.training.prepare --preset demo --ship

# Rerun every notebook at PRESET (default demo), retraining all runs, and rewrite results/, figures/, the notebooks and
# the README's results block (the demo's). Everything is written to $(STAGE) first and swapped in only when every notebook has
# finished: a failed or killed reproduce leaves the stored results as they were, and no other preset's are touched.
STAGE = build/reproduce-$(PRESET)
ABLATIONS = random-init thesis-regularisation
# thesis_lib.study.runs.ABLATIONS: the baseline's ablations, stored apart under results/_ablations/<name>/results/
REPRODUCED_DESIGNS = budget-confirm
# thesis_lib.study.designs.REPRODUCED: notebook 04 trains the budget arm's confirmatory runs; the long schedule is
# `make long`'s
reproduce: setup
	rm -rf $(STAGE) && mkdir -p $(STAGE)/notebooks
	# the scale goes in through THESIS_PRESET, not -p: an injected parameters cell would pin it for nbval (CI: smoke)
	export THESIS_PROGRESS=0 THESIS_PRESET=$(PRESET) THESIS_RESULTS=$(STAGE)/results THESIS_FIGURES=$(STAGE)/figures; \
	for nb in $(NOTEBOOKS); do $(PAPERMILL) --log-output notebooks/$$nb.ipynb $(STAGE)/notebooks/$$nb.ipynb || exit 1; done
	rm -rf results/$(PRESET) $(foreach a,$(ABLATIONS),results/_ablations/$(a)/results/$(PRESET)) $(foreach a,$(REPRODUCED_DESIGNS),results/_designs/$(a)/results/$(PRESET))
	mv $(STAGE)/results/$(PRESET) results/$(PRESET)
	for a in $(ABLATIONS); do d=results/_ablations/$$a/results; mkdir -p $$d; \
	  if [ -d $(STAGE)/$$d/$(PRESET) ]; then mv $(STAGE)/$$d/$(PRESET) $$d/; fi; done
	for a in $(REPRODUCED_DESIGNS); do d=results/_designs/$$a/results; mkdir -p $$d; \
	  if [ -d $(STAGE)/$$d/$(PRESET) ]; then mv $(STAGE)/$$d/$(PRESET) $$d/; fi; done
	mkdir -p figures && cp -R $(STAGE)/figures/. figures/
	cp $(STAGE)/notebooks/*.ipynb notebooks/
	if [ "$(PRESET)" = demo ]; then $(BIN)/python -m thesis_lib.study.report --preset demo --update-readme > /dev/null; fi
	$(BIN)/python -c "import json; from thesis_lib.numerics import written_on; print(json.dumps(written_on(), indent=1))" > results/$(PRESET)/written_on.json

# Table 2's long schedule (thesis_lib.study.designs.THESIS_LR_SUM): the whole model at the thesis's summed learning
# rate, baseline and TTE' × seeds 1-8 of 5,952 steps, one block of four seeds per sitting (BLOCK=1, BLOCK=2; ≈ 70 min
# a block on 2 cores), then its held-out curves and the paired models' per-item agreement; `make figures` renders
# them. Kept out of make reproduce (its own time) and make verify.
long: setup
	THESIS_PROGRESS=0 $(BIN)/python -m thesis_lib.study.designs thesis-lr-sum --preset $(PRESET) $(if $(BLOCK),--block $(BLOCK))

# The full-scale path in miniature (thesis preset, model shrunk, tiny real-format files written here): checkpoint
# check (guarded unpickler), a 2-process torchrun of several steps (teacher cache, a decode failure), the same run
# killed and resumed (compared bit for bit), notebooks 03 (reusing the torchrun run) and 05, into build/rehearsal/.
# REHEARSAL_ARGS="--notebooks all" adds the other notebooks, the figures and the report; on a GPU host without a
# package index: bash benchmarks/gpu.sh --rehearsal.
rehearsal: setup
	$(BIN)/python -m thesis_lib.study.rehearsal --out build/rehearsal $(REHEARSAL_ARGS)

# Redraw every figure (and, at the demo preset, the README's results block) from the stored results (no training),
# and rewrite every measured figure the documents quote from benchmarks/measured.json (thesis_lib.study.measured).
figures: setup
	$(BIN)/python -m thesis_lib.study.figures --preset $(PRESET)
	if [ "$(PRESET)" = demo ]; then $(BIN)/python -m thesis_lib.study.report --preset demo --update-readme > /dev/null; fi
	$(BIN)/python -m thesis_lib.study.measured

# JupyterLab on the notebooks, new notebooks on the kernel "Python (thesis-tte)"; --allow-root only where it is needed
# (root, as on most containers and rented GPU hosts); jupyter refuses root otherwise
lab: setup
	$(BIN)/jupyter lab notebooks/ --MappingKernelManager.default_kernel_name=$(KERNEL) \
	    $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)
