"""A training run's checkpoint, written with every generation: everything an exact
resume needs, and the run's result (its best-on-validation vector).

On disk (the ``checkpoints`` table) a checkpoint is a pickled dict with the keys of
``Checkpoint``'s fields, ``format`` and ``spend`` as a plain dict; ``Checkpoint`` is the
only code that reads or writes those keys, so nothing downstream (export, evaluation)
depends on them.
"""

from __future__ import annotations

import pickle
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from workbench.core.errors import BadInput, InvalidInput
from workbench.core.records import Spend
from workbench.core.store import Store
from workbench.core.training.basis import SearchBasis

CHECKPOINT_FORMAT = 1


@dataclass(frozen=True)
class TableChoice:
    """What a head chose for one validation task on a routing table, where no episode
    is played: the task, the worker it asked (for one Worker turn) and that answer's
    reward."""

    task_id: str
    worker: str
    reward: float


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """The state after ``generation`` (0-based) completed. ``center`` and ``best_vector``
    are head-space vectors ``[SVF offsets || head weights]`` (the search basis applied);
    ``optimizer`` is the optimizer's own opaque state. ``best_choices``: the best
    validation's choices when it was scored on a routing table (its episodes are not
    played, so this is what shows what the run learned); None when it played episodes,
    and in a stored checkpoint without them."""

    generation: int
    optimizer: bytes
    spend: Spend
    best_validation: float | None
    best_vector: np.ndarray | None
    best_validation_generation: int | None
    last_validation: float | None
    center: np.ndarray
    basis: SearchBasis
    n_params: int
    n_svf: int
    best_choices: tuple[TableChoice, ...] | None = None

    @property
    def result_vector(self) -> np.ndarray:
        """The run's result: the best-on-validation vector, or the distribution mean if the
        run was never validated."""
        return np.asarray(self.best_vector if self.best_vector is not None else self.center)

    def dumps(self) -> bytes:
        """The blob stored with the generation (the same pickle format since format 1)."""
        return pickle.dumps(
            {
                "format": CHECKPOINT_FORMAT,
                "generation": self.generation,
                "optimizer": self.optimizer,
                "spend": asdict(self.spend),
                "best_validation": self.best_validation,
                "best_vector": self.best_vector,
                "best_validation_generation": self.best_validation_generation,
                "last_validation": self.last_validation,
                "center": self.center,
                "basis": self.basis.to_dict(),
                "n_params": self.n_params,
                "n_svf": self.n_svf,
                "best_choices": None
                if self.best_choices is None
                else [(c.task_id, c.worker, c.reward) for c in self.best_choices],
            }
        )

    @classmethod
    def loads(cls, blob: bytes) -> Checkpoint:
        """A checkpoint from its stored blob; ``CheckpointError`` if this version cannot
        read it, or if it is damaged (``DamagedCheckpoint``)."""
        try:
            data: dict[str, Any] = pickle.loads(blob)
            if not isinstance(data, dict):
                raise TypeError(f"a {type(data).__name__}, not a checkpoint's fields")
        except Exception as e:  # any of unpickling's many errors: the bytes are not one
            raise DamagedCheckpoint(f"{type(e).__name__}: {e}") from e
        if data.get("format") != CHECKPOINT_FORMAT:
            raise CheckpointError(
                f"checkpoint format {data.get('format')} is not supported by this version"
            )
        return cls(
            generation=data["generation"],
            optimizer=data["optimizer"],
            spend=Spend(**data["spend"]),
            best_validation=data["best_validation"],
            best_vector=data["best_vector"],
            best_validation_generation=data["best_validation_generation"],
            last_validation=data["last_validation"],
            center=np.asarray(data["center"]),
            # checkpoints written before the search basis existed searched the identity
            basis=SearchBasis.from_dict(data["basis"]) if "basis" in data else SearchBasis(),
            n_params=data["n_params"],
            n_svf=data["n_svf"],
            best_choices=None
            if data.get("best_choices") is None
            else tuple(TableChoice(*c) for c in data["best_choices"]),
        )


class CheckpointError(BadInput, RuntimeError):
    """A stored checkpoint cannot be used by this version or this config."""


class DamagedCheckpoint(CheckpointError):
    """A stored checkpoint's bytes do not read back as a checkpoint."""


def latest_checkpoint(store: Store, run_id: str) -> Checkpoint | None:
    """The checkpoint of a run's last completed generation, or None before the first."""
    latest = store.latest_checkpoint(run_id)
    if latest is None:
        return None
    try:
        checkpoint = Checkpoint.loads(latest[1])
    except DamagedCheckpoint as e:
        raise DamagedCheckpoint(
            f"the checkpoint of run {run_id[:8]}'s generation {latest[0] + 1} is damaged and "
            f"cannot be read ({e}): the run cannot be resumed or exported; its stored "
            "generations and episodes stay readable, and a new run with its config trains "
            "it again"
        ) from e
    if checkpoint.generation != latest[0]:
        raise CheckpointError(
            f"checkpoint of run {run_id} is inconsistent "
            f"(generation {checkpoint.generation} vs {latest[0]})"
        )
    return checkpoint


def best_vector(store: Store, run_id: str) -> tuple[np.ndarray, Checkpoint]:
    """A run's result: the best-on-validation vector (the distribution mean if it was never
    validated), with the checkpoint it comes from."""
    checkpoint = latest_checkpoint(store, run_id)
    if checkpoint is None:
        raise InvalidInput(
            f"run {run_id} has no completed generation yet: train or resume it first"
        )
    return checkpoint.result_vector, checkpoint
