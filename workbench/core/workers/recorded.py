"""The ``recorded`` provider: workers that answer from a recorded table of real answers
(task id, worker, response; optionally role, prompt setting, tokens, cost, latency) and
never from the network.

A task the table has no answer for, for that worker, raises ``NotRecorded`` (a
``WorkerError``): the turn records it as a failed call and the episode goes on; it is
never a crash and never a made-up answer. So does a turn in another role than the one the
answer was recorded in (``Recording.role``, Worker when absent): a recorded final answer
is no Thinker plan or Verifier verdict. A run of a pool of recorded workers only is
refused unless ``[protocol] roles = ["worker"]`` (``check_recorded_roles``). Recorded workers mix with live ones in a pool.

Built in: ``recorded:champ`` (the four CHAMP models' 0-shot answers) and one worker per
model and setting, ``recorded:champ/<model>`` (0-shot) and ``recorded:champ/<model>-5shot``,
read from the ``champ-dataset`` package (the last assistant message of each conversation
is the answer; its tokens are the whole conversation's, ``conversation_tokens``). CHAMP's "No C w/o H" setting is a byte-identical copy of "0-Shot" and is
not offered; the settings that feed CHAMP's own solution steps or hints are left out.

Imported: ``recorded:NAME`` (every worker of the pool) and ``recorded:NAME/WORKER``, a
pool imported into a workspace with ``trinity-workbench records import`` and kept there as
two files, ``records/NAME.jsonl`` (one answer a line, the import format:
``workbench.core.recordings``) and ``records/NAME.json`` (its suite, source, import time
and per-worker prices). A pool is read once per process and file version.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.core.errors import InvalidInput
from workbench.core.printable import shown_path
from workbench.core.workers.base import (
    Completion,
    EpisodeContext,
    Message,
    UnknownWorker,
    Worker,
    WorkerError,
)

if TYPE_CHECKING:
    from workbench.core.tasks.model import Task
    from workbench.core.workspace import Workspace


class NotRecorded(WorkerError):
    """The recorded table has no answer for this task from this worker (not retryable)."""


class RecordedPoolDamaged(InvalidInput):
    """An imported pool's files cannot be read (edited by hand, cut short): the message
    names the file and line and how to get the pool back."""


class RecordedPoolNotFound(UnknownWorker):
    """A ``recorded:NAME`` id whose pool is neither built in nor imported into the
    workspace, or names no worker of it; the message lists what there is."""


@dataclass(frozen=True, kw_only=True)
class Recording:
    """One recorded answer."""

    task_id: str
    worker: str
    response: str
    role: str | None = None
    setting: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost: float | None = None
    latency_s: float | None = None
    model: str | None = None  # the model that gave the answer, in words
    # what the answer's source said about it, kept to check against (never shown to the
    # coordinator): MMLU-Pro's extracted letter {"pred": "C"}, lm-evaluation-harness's
    # per-sample metrics; format 2 of the record file (workbench.core.recordings)
    meta: dict[str, Any] | None = field(default=None, hash=False, compare=True)


# CHAMP's models: worker name -> (the dataset's model name, USD per million input tokens,
# USD per million output tokens). Public list prices as of 2024-06-01: OpenAI's
# gpt-3.5-turbo-0125 $0.50/$1.50, gpt-4 (8k) $30/$60, gpt-4-turbo $10/$30; Google's
# PaLM 2 chat-bison $0.25/$0.50 per million *characters* (about 4 characters a token,
# so $1.00/$2.00 per million tokens).
CHAMP_MODELS: dict[str, tuple[str, float, float]] = {
    "gpt-3.5": ("GPT-3.5", 0.50, 1.50),
    "gpt-4": ("GPT-4", 30.0, 60.0),
    "gpt-4-turbo": ("GPT-4 Turbo", 10.0, 30.0),
    "palm-2": ("PaLM 2 Medium", 1.00, 2.00),
}
CHAMP_SETTINGS = {"": "0-Shot", "-5shot": "5-Shot"}
PRICES_AS_OF = "2024-06-01"
# the version of an imported pool's files this code writes and reads: 1 the first answer
# format, 2 adds each answer's ``meta`` (older files read unchanged)
FORMAT_VERSION = 2


@contextlib.contextmanager
def paused_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector while many objects without cycles are made
    (records read from JSON): its full passes over them cost about a third of reading a
    large pool or importing one (tests/benchmarks/bench_importers.py); reference counting
    still frees everything, and collection resumes after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class RecordedWorker(Worker):
    """Answers ``context.task.id`` from ``table`` (task id -> Recording)."""

    provider = "recorded"

    answers_at_no_cost = True  # reading a recording calls no one: nothing is spent now

    def __init__(
        self,
        worker_id: str,
        table: Mapping[str, Recording],
        *,
        model: str = "recorded",
        price_in: float = 0.0,
        price_out: float = 0.0,
        usage_estimated: bool = False,
    ):
        super().__init__(worker_id, model)
        self.table = table
        self.price_in = price_in
        self.price_out = price_out
        self.usage_estimated = usage_estimated  # the table's tokens are estimates (CHAMP)

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
        context: EpisodeContext | None = None,
    ) -> Completion:
        if context is None:
            raise NotRecorded(
                self.id,
                "a recorded worker answers only inside an episode (it looks the task up by "
                "id); use a live worker for free-form calls",
            )
        rec = self.table.get(context.task.id)
        if rec is None:
            raise NotRecorded(
                self.id,
                f"no recorded answer for task '{context.task.id}': this pool covers "
                f"{len(self.table)} tasks; use a suite the recording covers or add a live worker",
            )
        recorded_role = rec.role or "worker"
        if context.role != recorded_role:
            raise NotRecorded(
                self.id,
                f"a recorded worker answers only in the role it was recorded in "
                f"({recorded_role}), not as {context.role}: its table holds final answers, "
                'not plans or verdicts; set [protocol] roles = ["worker"] for a recorded pool, '
                "or add a live worker for the other roles",
            )
        prompt = "".join(m["content"] for m in messages)
        estimated = self.usage_estimated or rec.tokens_in is None or rec.tokens_out is None
        tokens_in = rec.tokens_in if rec.tokens_in is not None else _estimate_tokens(prompt)
        tokens_out = (
            rec.tokens_out if rec.tokens_out is not None else _estimate_tokens(rec.response)
        )
        cost = (
            rec.cost
            if rec.cost is not None
            else (tokens_in * self.price_in + tokens_out * self.price_out) / 1e6
        )
        return Completion(
            text=rec.response,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_s=rec.latency_s or 0.0,
            cost=cost,
            usage_estimated=estimated,
            model=self.model,
        )

    def covers(self, task: Task) -> bool:
        """Whether the table holds this worker's answer to ``task``."""
        return task.id in self.table

    def request_identity(
        self, *, max_tokens: int, temperature: float, seed: int | None
    ) -> dict[str, object]:
        # a recorded answer depends on neither the seed nor the decoding settings: leaving
        # the seed out lets every episode of a task share one cached reply
        ident = super().request_identity(max_tokens=max_tokens, temperature=temperature, seed=None)
        ident["extra"] = {"recorded": self.id}
        return ident


def conversation_tokens(messages: Sequence[tuple[bool, str]]) -> tuple[int, int]:
    """Estimated (tokens in, tokens out) of a recorded conversation, (is the model's,
    text) per message, at 4 characters a token: every model message was one call whose
    input was every message before it, and whose output was that message. CHAMP's answers
    are a full solution and then a one-sentence summary asked for in a second call: both
    calls were paid for, not only the summary (the answer a recorded worker gives)."""
    chars_in = chars_out = seen = 0
    for is_model, text in messages:
        if is_model:
            chars_in += seen
            chars_out += len(text)
        seen += len(text)
    return max(1, chars_in // 4), max(1, chars_out // 4)


def check_recorded_roles(pool: Sequence[Worker], roles: Sequence[str]) -> None:
    """Refuse a pool of recorded workers only with a role none of them was recorded in
    (the default three roles on ``recorded:champ``): every such turn would be a failed
    call. A pool with a live worker may use any role: its recorded workers' turns in
    another role fail (``NotRecorded``) and the coordinator learns to avoid them."""
    inner = [getattr(w, "inner", w) for w in pool]  # a cached worker's own
    recorded = [w for w in inner if isinstance(w, RecordedWorker)]
    if not recorded or len(recorded) != len(inner):
        return
    have = {r.role or "worker" for w in recorded for r in w.table.values()}
    missing = [r for r in roles if r not in have]
    if missing:
        raise InvalidInput(
            f"this pool answers only from recordings, in the role(s) {', '.join(sorted(have))}; "
            f"every {', '.join(missing)} turn would fail: set [protocol] roles = "
            f"{json.dumps(sorted(have))} in the config (or add a live worker)",
        )


@functools.lru_cache(maxsize=1)
def champ_tables() -> dict[str, dict[str, Recording]]:
    """worker id -> task id -> Recording, from the champ-dataset package."""
    try:
        import champ_dataset
    except ImportError as exc:  # pragma: no cover - a dependency
        raise WorkerError(
            "recorded:champ", "needs the 'champ-dataset' package: pip install champ-dataset"
        ) from exc
    dataset = champ_dataset.load("v0")
    tables: dict[str, dict[str, Recording]] = {}
    for name, (model, _pin, _pout) in CHAMP_MODELS.items():
        for suffix, setting in CHAMP_SETTINGS.items():
            wid = f"recorded:champ/{name}{suffix}"
            table: dict[str, Recording] = {}
            for pid, problem in dataset.problems.items():
                conv = problem.conversations.get(f"{model}|{setting}")
                if conv is None:
                    continue
                answers = [m for m in conv.messages if str(m.role).startswith("Model.")]
                if not answers or not answers[-1].text:
                    continue
                tokens_in, tokens_out = conversation_tokens(
                    [(str(m.role).startswith("Model."), m.text or "") for m in conv.messages]
                )
                table[pid] = Recording(
                    task_id=pid,
                    worker=wid,
                    response=answers[-1].text,
                    role="worker",
                    setting=setting,
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                )
            tables[wid] = table
    return tables


def champ_worker(worker_id: str) -> RecordedWorker:
    name = worker_id.removeprefix("recorded:champ/").removesuffix("-5shot")
    if name not in CHAMP_MODELS or worker_id not in champ_tables():
        known = ", ".join(sorted(champ_tables()))
        raise RecordedPoolNotFound(
            f"unknown recorded worker '{worker_id}': the champ recordings are {known} "
            "(or 'recorded:champ' for the four 0-shot ones)"
        )
    model, pin, pout = CHAMP_MODELS[name]
    return RecordedWorker(
        worker_id,
        champ_tables()[worker_id],
        model=model,
        price_in=pin,
        price_out=pout,
        usage_estimated=True,
    )


# --------------------------------------------------------------------------- imported pools


@dataclass(frozen=True, kw_only=True)
class RecordedPool:
    """A recorded pool imported into a workspace: its answers per worker and what its
    metadata file says (suite, source, import time, per-worker prices in USD per million
    tokens)."""

    name: str
    suite: str
    source: str
    created_at: float
    tables: dict[str, dict[str, Recording]]  # short worker name -> task id -> Recording
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)

    def worker_id(self, worker: str) -> str:
        return f"recorded:{self.name}/{worker}"

    def workers(self) -> list[RecordedWorker]:
        """One worker per recorded worker name, in the pool's order."""
        out = []
        for worker, table in self.tables.items():
            pin, pout = self.prices.get(worker, (0.0, 0.0))
            models = {r.model for r in table.values() if r.model}
            model = models.pop() if len(models) == 1 else f"recorded/{worker}"
            out.append(
                RecordedWorker(
                    self.worker_id(worker), table, model=model, price_in=pin, price_out=pout
                )
            )
        return out


def imported_names_in(worker_ids: Sequence[str]) -> list[str]:
    """The imported recorded pools ``worker_ids`` name (``recorded:NAME`` or
    ``recorded:NAME/WORKER``; the built-in CHAMP pool is not imported), in order."""
    names: list[str] = []
    for wid in worker_ids:
        wid = wid.strip()
        if not wid.startswith("recorded:"):
            continue
        name = wid.removeprefix("recorded:").partition("/")[0]
        if name != "champ" and name not in names:
            names.append(name)
    return names


def pool_paths(workspace: Workspace, name: str) -> tuple[Path, Path]:
    """(answers, metadata) files of the recorded pool ``name`` in ``workspace``."""
    return workspace.records_dir / f"{name}.jsonl", workspace.records_dir / f"{name}.json"


def imported_pool_names(workspace: Workspace) -> list[str]:
    """The recorded pools imported into ``workspace``, sorted."""
    folder = workspace.records_dir
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.json") if (folder / f"{p.stem}.jsonl").is_file())


def load_recorded_pool(workspace: Workspace, name: str) -> RecordedPool:
    """The recorded pool ``name`` imported into ``workspace`` (``RecordedPoolNotFound``
    when there is none), read once per process and version of its files."""
    answers, meta = pool_paths(workspace, name)
    if not answers.is_file() or not meta.is_file():
        known = ", ".join(["champ (built in)", *imported_pool_names(workspace)])
        raise RecordedPoolNotFound(
            f"no recorded pool named '{name}' in workspace {shown_path(workspace.root)}: the "
            f"recorded pools are {known}; import one with trinity-workbench records import FILE "
            f"--name {name} --suite SUITE",
        )
    stamp = (answers.stat().st_mtime_ns, meta.stat().st_mtime_ns)
    with paused_cycle_collection():
        return _read_pool(str(answers), str(meta), stamp, str(workspace.root))


def _damaged(name: str, path: str, line: int, problem: str, root: str) -> RecordedPoolDamaged:
    where = shown_path(path, root) + (f":{line}" if line else "")
    return RecordedPoolDamaged(
        f"recorded pool '{name}' is damaged: {where}: {problem}; import it again with "
        f"trinity-workbench records import FILE --name {name} --suite SUITE --replace, or "
        f"remove it with trinity-workbench records remove {name}"
    )


@functools.lru_cache(maxsize=16)
def _read_pool(answers: str, meta: str, _stamp: tuple[int, int], root: str) -> RecordedPool:
    name = Path(meta).stem
    try:
        info: Any = json.loads(Path(meta).read_text(encoding="utf-8"))
        if not isinstance(info, dict):
            raise ValueError("expected a JSON object")
        version = info.get("format", 1)
        if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
            raise ValueError(
                f"format {version!r}: this version of the workbench reads formats 1 to "
                f"{FORMAT_VERSION} (a newer workbench wrote it: update this one)"
            )
        prices = {w: (float(p[0]), float(p[1])) for w, p in info.get("prices", {}).items()}
        header = {
            "name": info["name"],
            "suite": info["suite"],
            "source": info["source"],
            "created_at": float(info["created_at"]),
        }
        workers = list(info.get("workers", []))
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as exc:
        problem = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise _damaged(name, meta, 0, problem, root) from None
    tables: dict[str, dict[str, Recording]] = {w: {} for w in workers}
    try:
        with open(answers, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    if not isinstance(record, dict):
                        raise TypeError("expected a JSON object")
                    rec = Recording(**record)
                except (ValueError, TypeError) as exc:
                    raise _damaged(name, answers, number, str(exc), root) from None
                tables.setdefault(rec.worker, {})[rec.task_id] = rec
    except UnicodeDecodeError as exc:
        raise _damaged(name, answers, 0, f"not UTF-8 ({exc.reason})", root) from None
    return RecordedPool(**header, tables=tables, prices=prices)


def resolve(
    worker_id: str,
    workspace: Workspace | None = None,
    shipped: Mapping[str, RecordedPool] | None = None,
) -> list[Worker]:
    """The workers built-in id ``worker_id`` (``recorded:NAME`` or ``recorded:NAME/WORKER``,
    ``spec.BUILTIN_RESOLVERS``) names: a built-in pool's, else an imported pool's from ``shipped`` (pools read elsewhere and
    handed over: a Ray actor has no workspace) or from ``workspace``."""
    if worker_id in ("recorded", "recorded:champ"):
        return [champ_worker(f"recorded:champ/{name}") for name in CHAMP_MODELS]
    if worker_id.startswith("recorded:champ/"):
        return [champ_worker(worker_id)]
    name, _, worker = worker_id.removeprefix("recorded:").partition("/")
    if shipped is not None and name in shipped:
        pool = shipped[name]
    elif workspace is None:
        raise RecordedPoolNotFound(
            f"recorded pool '{name}' is not built in, and no workspace was given to find "
            "an imported one in: pass --workspace, or use recorded:champ",
        )
    else:
        pool = load_recorded_pool(workspace, name)
    workers = pool.workers()
    if not worker:
        return list(workers)
    found: list[Worker] = [w for w in workers if w.id == worker_id]
    if not found:
        raise RecordedPoolNotFound(
            f"recorded pool '{name}' has no worker '{worker}': its workers are "
            f"{', '.join(w.id for w in workers)}",
        )
    return found
