"""A key never reaches a file, the store, a log record, an exported episode or an error
message: full episodes with a known fake key (stored in a real Secret Service keyring,
sent to a loopback server that also echoes it back in a 401), then every file under the
workspace, config and data directories and every log record is searched for it."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import numpy as np

from tests.support.fault_server import MODEL, Fault
from workbench.core.coordinator import Coordinator
from workbench.core.protocol import EpisodeSettings, run_episode
from workbench.core.store import Store
from workbench.core.tasks.model import Task
from workbench.core.workers.cache import cached_pool
from workbench.core.workers.pool import build_pool
from workbench.core.workers.registry import Registry
from workbench.core.workers.spec import WorkerSpec
from workbench.core.workers.transport import open_client
from workbench.core.workspace import Workspace

FAKE_KEY = "sk-test-NEVER-WRITE-ME-7f3a9c2e5b1d"
TASKS = [
    Task(id=f"s{i}", kind="math", prompt=f"What is {i} + 5?", answer=str(i + 5), category="math")
    for i in range(6)
]


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]


def test_a_key_reaches_the_server_and_nowhere_else(
    keychain, fault_server, tiny_backbone, tmp_path, caplog
):
    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    registry = Registry()  # the user's workers.toml under the test's own XDG_CONFIG_HOME
    registry.add(
        WorkerSpec(
            id="loop",
            provider="openai",
            model=MODEL,
            base_url=fault_server.base_url,
            price_in=1.0,
            price_out=1.0,
        ),
        key=FAKE_KEY,
    )
    fault_server.script(
        Fault.ok(), Fault.status_code(401, f"Incorrect API key provided: {FAKE_KEY}")
    )
    ws = Workspace.open(tmp_path / "workspace")
    exported = ws.root / "exports"
    exported.mkdir()

    async def go():
        async with open_client() as client:
            with Store.open(ws) as store:
                pool, cache = cached_pool(
                    build_pool(["loop", "sandbox"], client=client), store, "read-write"
                )
                coordinator = Coordinator.untrained(tiny_backbone, len(pool), seed=5)
                episodes = []
                for i, task in enumerate(TASKS):
                    episode = await run_episode(
                        coordinator,
                        pool,
                        task,
                        EpisodeSettings(suite="secrets", max_turns=5, temperature=0.0),
                        rng=np.random.default_rng(i),
                        seed=i,
                    )
                    store.add_episode(episode)
                    (exported / f"{episode.id}.json").write_text(
                        store.export_episode_json(episode.id)
                    )
                    episodes.append(episode)
                return episodes, pool

    episodes, pool = asyncio.run(go())

    # The key was really used: the server saw it on the wire.
    sent = [
        r
        for r in fault_server.chat_requests()
        if r.headers.get("authorization") == f"Bearer {FAKE_KEY}"
    ]
    assert len(sent) >= 2
    # The 401 that echoed the key is on a turn, masked.
    errors = [t.error for e in episodes for t in e.turns if t.error]
    assert any("rejected (401 Unauthorized)" in err and "provided: ****" in err for err in errors)

    # Nowhere else: not in any file of the workspace, config, data or cache directories ...
    roots = [
        ws.root,
        Path(os.environ["XDG_CONFIG_HOME"]),
        Path(os.environ["XDG_DATA_HOME"]),
        tmp_path,
    ]
    files = files_under(*roots)
    assert any(p.name == "workers.toml" for p in files) and any(
        p.suffix == ".sqlite3" for p in files
    )
    assert any(p.suffix == ".json" for p in files)
    leaks = [str(p) for p in files if FAKE_KEY.encode() in p.read_bytes()]
    assert leaks == []
    # ... nor in a log record, an episode record, a worker's repr or its attributes.
    assert caplog.records and not [
        r for r in caplog.records if FAKE_KEY in caplog.handler.format(r)
    ]
    assert all(FAKE_KEY not in str(e.to_dict()) for e in episodes)
    assert all(FAKE_KEY not in repr(w) and FAKE_KEY not in str(vars(w.inner)) for w in pool)
