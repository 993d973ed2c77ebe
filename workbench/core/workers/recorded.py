"""The ``recorded`` provider: workers that answer from a recorded table of real answers
(task id, worker, response; optionally role, prompt setting, tokens, cost, latency) and
never from the network.

A task the table has no answer for, for that worker, raises ``NotRecorded`` (a
``WorkerError``): the turn records it as a failed call and the episode goes on; it is
never a crash and never a made-up answer. Recorded workers mix with live ones in a pool.

Built in: ``recorded:champ`` (the four CHAMP models' 0-shot answers) and one worker per
model and setting, ``recorded:champ/<model>`` (0-shot) and ``recorded:champ/<model>-5shot``,
read from the ``champ-dataset`` package (the last assistant message of each conversation
is the answer). CHAMP's "No C w/o H" setting is a byte-identical copy of "0-Shot" and is
not offered; the settings that feed CHAMP's own solution steps or hints are left out.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workbench.core.workers.base import (
    Completion,
    EpisodeContext,
    Message,
    Worker,
    WorkerError,
    register_builtin,
    register_provider,
)


class NotRecorded(WorkerError):
    """The recorded table has no answer for this task from this worker (not retryable)."""


@dataclass(frozen=True)
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


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


@register_provider("recorded")
class RecordedWorker(Worker):
    """Answers ``context.task.id`` from ``table`` (task id -> Recording)."""

    answers_at_no_cost = True  # reading a recording calls no one: nothing is spent now

    def __init__(
        self,
        worker_id: str,
        table: Mapping[str, Recording],
        *,
        model: str = "recorded",
        price_in: float = 0.0,
        price_out: float = 0.0,
    ):
        super().__init__(worker_id, model)
        self.table = table
        self.price_in = price_in
        self.price_out = price_out

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
        prompt = "".join(m["content"] for m in messages)
        estimated = rec.tokens_in is None or rec.tokens_out is None
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

    def covers(self, task) -> bool:
        """Whether the table has this task's answer."""
        return task.id in self.table

    def request_identity(
        self, *, max_tokens: int, temperature: float, seed: int | None
    ) -> dict[str, object]:
        # a recorded answer depends on neither the seed nor the decoding settings: leaving
        # the seed out lets every episode of a task share one cached reply
        ident = super().request_identity(max_tokens=max_tokens, temperature=temperature, seed=None)
        ident["extra"] = {"recorded": self.id}
        return ident


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
                table[pid] = Recording(pid, wid, answers[-1].text, role="worker", setting=setting)
            tables[wid] = table
    return tables


def champ_worker(worker_id: str) -> RecordedWorker:
    name = worker_id.removeprefix("recorded:champ/").removesuffix("-5shot")
    if name not in CHAMP_MODELS or worker_id not in champ_tables():
        known = ", ".join(sorted(champ_tables()))
        raise ValueError(
            f"unknown recorded worker '{worker_id}': the champ recordings are {known} "
            "(or 'recorded:champ' for the four 0-shot ones)"
        )
    model, pin, pout = CHAMP_MODELS[name]
    return RecordedWorker(
        worker_id, champ_tables()[worker_id], model=model, price_in=pin, price_out=pout
    )


def _resolve(worker_id: str) -> list[Worker]:
    if worker_id in ("recorded", "recorded:champ"):
        return [champ_worker(f"recorded:champ/{name}") for name in CHAMP_MODELS]
    return [champ_worker(worker_id)]


register_builtin("recorded", _resolve)
