# One setup path, taken by every target on first use (Python ≥ 3.10 with pip, and make):
#   - .venv, then torch: where no NVIDIA GPU is found (no `nvidia-smi`), the CPU-only wheels from PyTorch's index
#     (TORCH_INDEX; a few hundred MB instead of several GB of CUDA wheels); where that index cannot be reached, pip
#     goes on and the package brings torch from PyPI. On a GPU machine, PyPI's CUDA build. `make … TORCH_INDEX=` skips it.
#   - the package with the `notebooks` extra (papermill, JupyterLab, ipykernel): all that `make demo` needs;
#   - the Jupyter kernel "Python (thesis-tte)", registered for this user (`make lab` starts it; any JupyterLab lists it);
#   - `make test`, `make verify` and `make golden` add the `dev` extra (pytest, nbval, the peers the tests compare with).
# Two choices for a GPU machine:
#   - TORCH_INDEX_URL=<index>: torch and torchvision from this index alone, everything else from PyPI, e.g. a pinned
#     CUDA build: `make setup TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126`. Unlike TORCH_INDEX, an index
#     that cannot be reached is an error, and a venv whose torch came from another index gets this one's instead.
#     It is taken with or without `nvidia-smi` (pip does not look for a GPU): on a cluster's login node, which has no
#     GPU, it sets up the CUDA build the compute nodes then use from shared storage (docs/full_scale.md, "Cluster").
#   - WHEELS=<folder>: every pip call installs from the folder alone (pip --no-index --find-links), for a machine
#     without a package index: `make setup WHEELS=wheels` (and `make test WHEELS=wheels`). The folder is made where
#     PyPI can be reached by `make wheels WHEELS=wheels [TORCH_INDEX_URL=<index>]` (see there).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PRESET ?= demo
NOTEBOOKS := 00_notation 01_baseline 02_tte_before_encoders 03_tte_layerscale 04_layerscale_weights 05_modality_mechanisms
PAPERMILL := $(BIN)/papermill -k python3 --no-progress-bar
# the study prints one line per finished run to the terminal, not into the notebook (thesis_lib/study/runs: Log);
# --log-output echoes the notebook's own outputs there too
LOGGED := THESIS_PROGRESS=0 $(PAPERMILL) --log-output
KERNEL := thesis-tte
NO_NVIDIA_SMI := $(if $(shell command -v nvidia-smi 2>/dev/null),,1)
TORCH_INDEX ?= $(if $(NO_NVIDIA_SMI),https://download.pytorch.org/whl/cpu)
CPU_TORCH_NOTE := no nvidia-smi here: a CPU-only torch. To set up a venv for GPU nodes here (a login node), name \
    their CUDA build: make setup TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126
TORCH_SPEC := $(shell sed -n 's/^ *"\(torch[<>=~!][^"]*\)",.*/\1/p' pyproject.toml)
TORCH_INDEX_URL ?=
WHEELS ?=
PIP_INSTALL = $(BIN)/pip install --quiet$(if $(WHEELS), --no-index --find-links "$(WHEELS)")
# the venv's torch came from another TORCH_INDEX_URL (or none) than the one asked for: install it again
TORCH_STALE = $(if $(TORCH_INDEX_URL),$(if $(WHEELS),,$(if $(filter $(TORCH_INDEX_URL),$(shell cat $(BIN)/.torch 2>/dev/null)),,FORCE)))

.PHONY: setup demo test verify golden pretrained reproduce long rehearsal figures lab wheels FORCE

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip

# torch before the package, so that the package's own install finds it (no index reached: PyPI's, with the package)
# (the index is probed first: where it cannot be reached nothing is installed from it, so that pip never mixes a
# CPU-only torch found elsewhere with PyPI's torchvision, whose operators would then not load)
# (WHEELS: torch comes from the folder with the package; TORCH_INDEX_URL: from that index, or make stops; the stamp
# records the index, and another one asked for later replaces the venv's torch and torchvision)
$(BIN)/.torch: $(TORCH_STALE) | $(BIN)/python
ifneq ($(WHEELS),)
	@ls "$(WHEELS)"/*.whl > /dev/null 2>&1 || { echo "WHEELS=$(WHEELS) holds no wheels: make the folder where PyPI" \
	    "can be reached with 'make wheels WHEELS=$(WHEELS)' and bring it here" >&2; exit 2; }
	touch $@
else ifneq ($(TORCH_INDEX_URL),)
	$(if $(wildcard $@),$(BIN)/pip uninstall --quiet --yes torch torchvision)
	$(BIN)/pip install --quiet --index-url $(TORCH_INDEX_URL) "$(TORCH_SPEC)" torchvision || { echo "cannot install" \
	    "torch and torchvision from TORCH_INDEX_URL=$(TORCH_INDEX_URL): check the address (e.g." \
	    "https://download.pytorch.org/whl/cu126) and that it can be reached, or leave TORCH_INDEX_URL out" >&2; exit 2; }
	echo "$(TORCH_INDEX_URL)" > $@
else
	$(if $(and $(NO_NVIDIA_SMI),$(filter %/cpu,$(TORCH_INDEX))),@echo "$(CPU_TORCH_NOTE)")
	$(if $(TORCH_INDEX),if $(BIN)/python -c "import urllib.request as u; u.urlopen('$(TORCH_INDEX)/', timeout=10)" \
	    2>/dev/null; then $(BIN)/pip install --quiet --index-url $(TORCH_INDEX) "$(TORCH_SPEC)" torchvision; \
	    else echo "$(TORCH_INDEX) cannot be reached: torch comes from PyPI with the package"; fi)
	touch $@
endif

$(BIN)/.installed: pyproject.toml | $(BIN)/.torch
	$(PIP_INSTALL) -e ".[notebooks]"
	touch $@

$(BIN)/.installed-dev: pyproject.toml | $(BIN)/.installed
	$(PIP_INSTALL) -e ".[dev]"
	touch $@

# The wheel folder WHEELS for `make setup WHEELS=...` on a machine without a package index: made here, where PyPI
# (and TORCH_INDEX_URL) can be reached, by the Python minor version and on the kind of machine (Linux x86-64) it is
# for, as pip picks wheels for the machine it runs on. torch and torchvision from TORCH_INDEX_URL (default: PyPI's,
# its CUDA build), then, with them pinned, everything else the package, its notebooks and dev extras, pip and
# setuptools need, as wheels (pip wheel builds any published as source only). Start from an empty folder.
wheels: PIP_INSTALL = $(BIN)/pip install --quiet
wheels: | $(BIN)/python
	$(if $(WHEELS),,$(error make wheels needs WHEELS=<folder>, e.g. make wheels WHEELS=wheels))
	$(BIN)/pip wheel --quiet -w "$(WHEELS)" $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL)) "$(TORCH_SPEC)" torchvision
	$(BIN)/pip wheel --quiet -w "$(WHEELS)" --find-links "$(WHEELS)" pip setuptools ".[notebooks,dev]" \
	    $$(ls "$(WHEELS)" | sed -nE 's/^(torch|torchvision)-([^-]+)-.*\.whl$$/\1==\2/p')
	rm -f "$(WHEELS)"/thesis_lib-*.whl

$(BIN)/.kernel: $(BIN)/.installed
	$(BIN)/python -m ipykernel install --user --name $(KERNEL) --display-name "Python ($(KERNEL))"
	touch $@

setup: $(BIN)/.installed $(BIN)/.kernel

# The main job: notebook 03 (Table 2) at the embedded default, trained from scratch into build/demo/.
# The main job in the regime that can answer at the demo's cost: Table 2 with the TTE given the thesis's learning-rate
# budget within 600 steps (notebook 03's regime "TTE budget"; its 600-step default is too small a dose to test it)
demo: setup
	mkdir -p build/demo
	$(LOGGED) notebooks/03_tte_layerscale.ipynb build/demo/03_tte_layerscale.ipynb -p output_dir build/demo \
	    -p regime "TTE budget"

# The linter first (ruff: pyflakes and pycodestyle, lines up to 120 characters; pyproject.toml's [tool.ruff]), then the
# tests on every core (pytest-xdist; TEST_WORKERS=0: all in one process), a file's tests on one worker (they share its
# fixtures), the longest files first (conftest.py: FIRST), the notebooks under nbval among them.
TEST_WORKERS ?= auto
test: setup $(BIN)/.installed-dev
	$(BIN)/ruff check
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# Retrain one committed demo run (seed 0) of each variant family: every metric within its declared tolerance of
# results/demo and every claim's verdict unchanged (docs/reproducibility.md; about 10 min on 2 cores: BENCHMARKS.md;
# set THESIS_DATA to reuse the demo's prepared assets, THESIS_RESULTS to check another copy of the results; the runs
# train in one-thread workers, one per core, or THESIS_WORKERS).
verify: setup $(BIN)/.installed-dev
	THESIS_VERIFY_DEMO=1 THESIS_WORKERS=$(or $(THESIS_WORKERS),$(shell nproc 2>/dev/null || echo 1)) \
	    $(BIN)/python -m pytest tests/test_reproducible.py -k demo -s

# Rewrite tests/golden/smoke_seed0.json: only on purpose (a change meant to alter the numbers).
golden: setup $(BIN)/.installed-dev
	$(BIN)/python tests/test_reproducible.py --update

# Rebuild the demo's pretrained stand-ins the package ships (thesis_lib/assets/pretrained-demo-*, ≈ 4 min): only on
# purpose (a change to the demo pretraining or what it depends on). With WIDTH=192 or 384: build the width ladder's
# stand-ins at that width (model, teacher and encoders; claims/designs.py width_overrides) into the data folder's
# cache, not shipped (≈ 25 min at 192 on one core, over an hour at 384).
pretrained: setup
	if [ -n "$(WIDTH)" ]; then \
	  $(BIN)/python -m thesis_lib.training.prepare --preset demo $$($(BIN)/python -c "from thesis_lib.study.claims.designs \
	    import width_overrides as w; print(' '.join(f'--set {k}={v}' for k, v in w($(WIDTH))))"); \
	else $(BIN)/python -m thesis_lib.training.prepare --preset demo --ship; fi

# Rerun every notebook at PRESET (default demo), retraining all runs, and rewrite results/, figures/, the notebooks and
# the README's results block (the demo's). Everything is written to $(STAGE) first and swapped in only when every notebook has
# finished: a failed or killed reproduce leaves the stored results as they were, and no other preset's are touched.
STAGE = build/reproduce-$(PRESET)
ABLATIONS = random-init thesis-regularisation
# thesis_lib.study.runs.ABLATIONS: the baseline's ablations, stored apart under results/_ablations/<name>/results/
REPRODUCED_DESIGNS = budget-confirm
# thesis_lib.study.claims.designs.REPRODUCED: notebook 04 trains the budget arm's confirmatory runs; the long schedule is
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
	if [ "$(PRESET)" = demo ]; then $(BIN)/python -m thesis_lib.study.pages.report --preset demo --update-readme > /dev/null; fi
	$(BIN)/python -c "import json; from thesis_lib.numerics import written_on; print(json.dumps(written_on(), indent=1))" > results/$(PRESET)/written_on.json

# The long schedule's designs (thesis_lib.study.claims.designs): the whole model at the thesis's summed learning rate
# (5,952 steps), one block of four seeds per sitting (BLOCK=K; ≈ 70 min a block of 8 runs on 2 cores), then, for the
# baseline-and-TTE' designs, the held-out curves and the paired models' per-item agreement; `make figures` renders
# them. DESIGN=thesis-lr-sum (the 8-seed record: BLOCK=1, 2), thesis-lr-sum-confirm (Table 2 confirmed on seeds
# 9-40: BLOCK=1 … 8), thesis-lr-sum-table1 (Table 1's 2 × 2 on seeds 1-4 with its own baseline arm: one block of 16 runs), thesis-lr-sum-pilot
# (seed 0, 6,000 steps: two runs). Kept out of make reproduce (its own time) and make verify.
DESIGN = thesis-lr-sum
long: setup
	THESIS_PROGRESS=0 $(BIN)/python -m thesis_lib.study.claims.designs $(DESIGN) --preset $(PRESET) $(if $(BLOCK),--block $(BLOCK))

# The full-scale path in miniature (thesis preset, model shrunk, tiny real-format files written here): checkpoint
# check (guarded unpickler), a 2-process torchrun of several steps (the recipe's augmented teacher view, a decode
# failure), the same run killed and resumed (compared bit for bit), the recipe's generated launches (an 8-GPU lane
# run by bash, an srun-style launch building the fixed-view teacher cache in parts, the pilot), all six notebooks
# (03 reusing the torchrun run), the figures and the report, into build/rehearsal/. On a GPU host without a package
# index: bash benchmarks/gpu.sh --rehearsal.
rehearsal: setup
	$(BIN)/python -m thesis_lib.full_scale.rehearsal --out build/rehearsal $(REHEARSAL_ARGS)

# Redraw every figure (and, at the demo preset, the README's results block) from the stored results (no training),
# and rewrite every measured figure the documents quote from benchmarks/measured.json (thesis_lib.full_scale.measured),
# then every figure the full-scale guide quotes from the recipe's computation (thesis_lib.full_scale.guide).
figures: setup
	$(BIN)/python -m thesis_lib.study.pages.figures --preset $(PRESET)
	if [ "$(PRESET)" = demo ]; then $(BIN)/python -m thesis_lib.study.pages.report --preset demo --update-readme > /dev/null; fi
	$(BIN)/python -m thesis_lib.full_scale.measured
	$(BIN)/python -m thesis_lib.full_scale.guide

# JupyterLab on the notebooks, new notebooks on the kernel "Python (thesis-tte)"; --allow-root only where it is needed
# (root, as on most containers and rented GPU hosts); jupyter refuses root otherwise
lab: setup
	$(BIN)/jupyter lab notebooks/ --MappingKernelManager.default_kernel_name=$(KERNEL) \
	    $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)
