"""Checkpoints a GRPO run can resume from (:func:`helpers.training.trainer.train` calls :func:`last_checkpoint`):
the newest one whose files hold all of the run's state and load. Over Google Drive a checkpoint's files are
not written atomically, so the newest can be half uploaded; it is then skipped for the one before (Drive
keeps two, :data:`helpers.colab.persist.DRIVE_CHECKPOINTS`)."""

from __future__ import annotations

from pathlib import Path


def last_checkpoint(output_dir, verbose: bool = True) -> Path | None:
    """The newest ``checkpoint-<step>`` folder in ``output_dir`` that loads (:func:`checkpoint_problem`
    finds nothing wrong), or None. Newer ones are skipped, with the reason printed when ``verbose`` (a
    Drive disconnect mid-upload can leave ``trainer_state.json`` beside a truncated ``optimizer.pt``)."""
    found = [p for p in Path(output_dir).glob("checkpoint-*") if p.is_dir() and p.name.split("-", 1)[1].isdigit()]
    for path in sorted(found, key=checkpoint_step, reverse=True):
        problem = checkpoint_problem(path)
        if problem is None:
            return path
        if verbose:
            print(f"Skipping {path.name}, it does not load: {problem}")
    return None


def checkpoint_problem(path) -> str | None:
    """Why the trainer checkpoint in ``path`` would not resume the run as it was, or None when it would.

    Required, because transformers 4.56 resumes without them silently (``Trainer._load_optimizer_and_scheduler``
    loads the optimizer only when ``scheduler.pt`` exists too, ``_load_rng_state`` skips a missing file):
    ``trainer_state.json`` (the step), weights (``*.safetensors``/``*.bin``, and ``adapter_config.json``
    beside a PEFT adapter's), ``optimizer.pt`` (AdamW's moments), ``scheduler.pt`` (the warm-up and decay
    reached) and ``rng_state.pth`` (or ``rng_state_<rank>.pth`` per process); DeepSpeed's ``global_step*``
    folder stands for weights, optimizer and scheduler. Every file present is read: JSON parsed,
    safetensors' header checked, ``torch.save`` zip archives checked against their CRC-32s, older pickles
    loaded on the CPU.
    """
    import json
    import zipfile

    path = Path(path)
    deepspeed = any(path.glob("global_step*"))
    weights = [f for f in (*path.glob("*.safetensors"), *path.glob("*.bin")) if f.name != "training_args.bin"]
    required = {
        "trainer state": [path / "trainer_state.json"],
        "optimizer state": [path / "optimizer.pt"],
        "scheduler state": [path / "scheduler.pt"],
        "random state": [path / "rng_state.pth", *path.glob("rng_state_*.pth")],
        "weights": weights,
    }
    if any(f.name.startswith("adapter_model.") for f in weights):
        required["adapter config"] = [path / "adapter_config.json"]
    in_deepspeed_folder = ("optimizer state", "scheduler state", "weights")
    for what, files in required.items():
        if not any(f.is_file() for f in files) and not (deepspeed and what in in_deepspeed_folder):
            return f"no {what} ({', '.join(f.name for f in files) or 'no weights file'} missing)"
    for file in sorted(f for f in path.rglob("*") if f.is_file()):
        try:
            if file.suffix == ".json":
                json.loads(file.read_text())
            elif file.suffix == ".safetensors":
                from safetensors import safe_open

                with safe_open(str(file), "pt"):
                    pass
            elif file.suffix in (".pt", ".pth", ".bin"):
                if not zipfile.is_zipfile(file):  # a truncated zip has lost its directory too
                    import torch

                    torch.load(file, map_location="cpu", weights_only=False)
                else:
                    with zipfile.ZipFile(file) as archive:
                        bad = archive.testzip()
                    if bad is not None:
                        return f"{file.name}: bad CRC in {bad}"
        except Exception as error:  # truncated, empty, corrupt
            return f"{file.relative_to(path)}: {type(error).__name__}: {str(error)[:120]}"
    return None


def checkpoint_step(path) -> int:
    """The step of a ``checkpoint-<step>`` folder."""
    return int(Path(path).name.split("-", 1)[1])
