"""Training: the losses, the loop, distributed helpers, the demo's pretraining, preparing a run's assets, the run's
files, and ``run`` (one training + evaluation run, the CLI)."""
