"""The export job: a run's best-on-validation coordinator written to a coordinator file
(safetensors weights and a manifest, ``workbench.core.export``).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from workbench.core.coordinator import Backbone
from workbench.core.jobs.shared import backbone_for
from workbench.core.progress import StageListener
from workbench.core.store import Store
from workbench.core.training.checkpoint import best_vector
from workbench.core.training.executors import coordinator_from_vector
from workbench.core.workers.pool import describe_pool
from workbench.core.workspace import Workspace


def export_run(
    workspace: Workspace,
    run: str,
    out: str | Path,
    backbone: Backbone | None = None,
    stages: StageListener | None = None,
) -> Path:
    """Write a run's best-on-validation coordinator to a coordinator file; ``out`` is a
    file, or a folder to write ``coordinator-RUNID.safetensors`` in (``export.resolve_out``).
    ``stages`` hears the backbone being loaded (the SVF adapter and the file's manifest
    read it)."""
    from workbench.core.export import resolve_out, save_coordinator

    with Store.open(workspace) as store:
        record = store.get_run(run)
        default_name = f"coordinator-{record.id[:8]}"
        out = resolve_out(out, default_name)  # a bad place fails before the backbone loads
        config = record.config()
        vector, checkpoint = best_vector(store, record.id)
        backbone = backbone_for(config, backbone, stages=stages)
        pool = describe_pool(config.pool.workers, workspace=workspace)
        coordinator = coordinator_from_vector(backbone, len(pool), vector, config.optimizer.svf)
        training = {
            "run_id": record.id,
            "name": record.name,
            "optimizer": config.optimizer.name,
            "generations": checkpoint.generation + 1,
            "best_validation": checkpoint.best_validation,
            # counted from 1, as "generations" and the GUI count (format version 2)
            "best_validation_generation": (
                None
                if checkpoint.best_validation_generation is None
                else checkpoint.best_validation_generation + 1
            ),
            "spend": asdict(checkpoint.spend),
            "config": config.to_dict(),
        }
        return save_coordinator(
            out,
            coordinator,
            pool=[{"id": wid, "model": model} for wid, model in pool],
            backbone_source=config.backbone.model,
            max_turns=config.protocol.max_turns,
            training=training,
            default_name=default_name,
        )
