"""The results tree, read and written without JAX.

``contract`` is the one definition of the layout, its file names, the typed summary and manifest
and when a run is complete; everything else reads the tree through it. ``seed_plan`` decides per
seed from the tree (skip, resume, run), ``ownership`` claims run folders with lock files,
``status`` and ``wandb_sync`` are the
sweep-level tools (``make status``, ``make wandb-sync``). Nothing here imports JAX.
"""
