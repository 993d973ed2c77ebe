"""A trained team at work: a coordinator and its pool answering free questions, one
episode each (argmax acting, the run's protocol), every episode stored in the workspace
under one ``serve`` run so that Replay shows it.

``load_team`` is the one door from a trained run or a coordinator file to a ``Team``;
the HTTP server (``workbench.core.serving.api``) and the GUI's Playground both use it.
While an episode runs, a listener hears each turn as it happens: ``TurnDecided`` when the
coordinator has chosen (worker, role), ``TurnReplied`` when the worker has answered.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from workbench.core.coordinator import Backbone, Coordinator
from workbench.core.errors import BadInput, InvalidInput
from workbench.core.jobs.evaluate import EvaluationSource, evaluation_source
from workbench.core.jobs.shared import backbone_for
from workbench.core.protocol import (
    FINAL_TURNS,
    EpisodeSettings,
    EpisodeTag,
    Prompts,
    parse_verdict,
    run_episode,
)
from workbench.core.records import (
    ROLES,
    Episode,
    Role,
    RunStopReason,
    StopReason,
    Turn,
    Verdict,
)
from workbench.core.spend import is_recorded
from workbench.core.store import Store
from workbench.core.store.lifecycle import RunLife
from workbench.core.tasks.model import KINDS, Task
from workbench.core.transcript import render_transcript
from workbench.core.workers.base import (
    Completion,
    EpisodeContext,
    Message,
    Worker,
    WorkerError,
)
from workbench.core.workspace import Workspace

log = logging.getLogger(__name__)

SUITE = "serve"  # the suite name served episodes carry
NOT_GRADED = "a served question has no reference answer: not graded"
CHAT_ROLES = ("system", "developer", "user", "assistant", "tool")
CANCELLED = "the request was cancelled before the episode ended (its client left, or the "
"server stopped): not graded"
# the longest prompt the coordinator reads by default: well inside a small backbone's
# context (SmolLM2: 8,192 positions), leaving room for the turns' replies, and a forward
# whose memory this machine holds several of at once (docs/guides/serving.md)
MAX_PROMPT_TOKENS = 4096


class PromptTooLong(BadInput, ValueError):
    """A conversation longer than the team's prompt budget (``tokens`` counted)."""

    def __init__(self, tokens: int, budget: int):
        super().__init__(
            f"This model's maximum context length is {budget} tokens. However, your messages "
            f"resulted in {tokens} tokens. Please reduce the length of the messages (or start "
            "the server with a larger --max-prompt-tokens)."
        )
        self.tokens, self.budget = tokens, budget


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, kw_only=True)
class TurnDecided:
    """The coordinator chose ``worker`` in ``role`` for turn ``index``; ``worker_probs``
    are over ``pool`` (in its order), ``role_probs`` over ``ROLES``."""

    index: int
    worker: str
    role: Role
    worker_probs: tuple[float, ...]
    role_probs: tuple[float, ...]
    pool: tuple[str, ...]

    @property
    def worker_prob(self) -> float:
        """The probability of the chosen worker."""
        return self.worker_probs[self.pool.index(self.worker)]

    @property
    def role_prob(self) -> float:
        """The probability of the chosen role."""
        return self.role_probs[ROLES.index(self.role)]


@dataclass(frozen=True, kw_only=True)
class TurnReplied:
    """The worker of turn ``index`` answered (or failed: ``error``)."""

    index: int
    worker: str
    role: Role
    text: str = ""
    verdict: Verdict | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    latency_s: float = 0.0
    error: str | None = None


TeamEvent = TurnDecided | TurnReplied
Listener = Callable[[TeamEvent], None]


class _WatchedCoordinator:
    """The coordinator as ``run_episode`` sees it, telling a listener each decision."""

    def __init__(self, coordinator: Coordinator, pool_ids: Sequence[str], listener: Listener):
        self._coordinator = coordinator
        self._pool_ids = tuple(pool_ids)
        self._listener = listener
        self.index = -1

    @property
    def n_workers(self) -> int:
        return self._coordinator.n_workers

    def context_fits(self, transcript: str) -> bool:
        return self._coordinator.context_fits(transcript)

    async def adecide(self, transcript: str, rng: Any = None) -> Any:
        action = await self._coordinator.adecide(transcript, rng)
        self.index += 1
        self._listener(
            TurnDecided(
                index=self.index,
                worker=self._pool_ids[action.worker],
                role=ROLES[action.role],
                worker_probs=tuple(action.worker_probs),
                role_probs=tuple(action.role_probs),
                pool=self._pool_ids,
            )
        )
        return action


class _WatchedWorker(Worker):
    """A pool worker that tells a listener each reply (or failure) of its turn."""

    provider = "watched"

    def __init__(self, inner: Worker, watch: _WatchedCoordinator, listener: Listener):
        super().__init__(inner.id, inner.model)
        self._inner = inner
        self._watch = watch
        self._listener = listener

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
        context: EpisodeContext | None = None,
    ) -> Completion:
        index = self._watch.index
        role = Role(context.role) if context is not None else Role.WORKER
        started = time.perf_counter()
        try:
            reply = await self._inner.complete(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
                context=context,
            )
        except Exception as exc:
            error = str(exc) if isinstance(exc, WorkerError) else f"{type(exc).__name__}: {exc}"
            self._listener(
                TurnReplied(
                    index=index,
                    worker=self.id,
                    role=role,
                    error=error,
                    latency_s=time.perf_counter() - started,
                )
            )
            raise
        verdict = parse_verdict(reply.text)[0] if role is Role.VERIFIER else None
        self._listener(
            TurnReplied(
                index=index,
                worker=self.id,
                role=role,
                text=reply.text,
                verdict=verdict,
                tokens_in=reply.tokens_in,
                tokens_out=reply.tokens_out,
                cost=reply.cost,
                latency_s=reply.latency_s,
            )
        )
        return reply


# --------------------------------------------------------------------------- questions


def question_task(messages: Sequence[Message], kind: str = "text") -> Task:
    """A chat conversation as the team's task: the last user message is the query; earlier
    instructions and turns come before it as context. ``kind`` picks the answer format the
    Worker prompt asks for (``math``, ``choice``, ``code`` or ``text``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown task kind '{kind}': use one of {', '.join(KINDS)}")
    if not messages:
        raise ValueError("messages is empty: send at least one user message")
    *earlier, last = messages
    if last.get("role") != "user":
        raise ValueError("the last message must come from the user (role 'user')")
    parts = []
    instructions = [m["content"] for m in earlier if m["role"] in ("system", "developer")]
    if instructions:
        parts.append("Instructions:\n" + "\n\n".join(instructions))
    conversation = [
        f"{m['role'].capitalize()}: {m['content']}"
        for m in earlier
        if m["role"] not in ("system", "developer")
    ]
    if conversation:
        parts.append("Conversation so far:\n" + "\n\n".join(conversation))
    parts.append(("Question:\n" if parts else "") + last["content"])
    prompt = "\n\n".join(parts)
    digest = hashlib.sha256(f"{kind}\x1e{prompt}".encode()).hexdigest()[:16]
    return Task(id=f"serve-{digest}", kind=kind, prompt=prompt)


# --------------------------------------------------------------------------- the team


class Team:
    """A trained coordinator and its pool, answering one question per episode.

    ``start()`` builds the pool (keys from the keychain), opens the workspace's store and
    records a ``serve`` run; ``answer()`` runs and stores one episode; ``aclose()`` closes
    the pool and marks the run finished. All three run in the same event loop.
    """

    def __init__(
        self,
        coordinator: Coordinator,
        source: EvaluationSource,
        workspace: Workspace,
        *,
        max_turns: int | None = None,
        prompts: Prompts | None = None,
        final_turn: str = "worker",
        max_prompt_tokens: int | None = None,
    ):
        if coordinator.n_workers != len(source.pool):
            raise ValueError(
                f"the coordinator has {coordinator.n_workers} worker rows but its pool "
                f"{', '.join(source.pool)} has {len(source.pool)}"
            )
        self.coordinator = coordinator
        self.source = source
        self.workspace = workspace
        self.max_turns = source.config.protocol.max_turns if max_turns is None else max_turns
        if self.max_turns < 1:
            raise ValueError("--max-turns must be at least 1")
        if final_turn not in FINAL_TURNS:
            raise ValueError(f"--final-turn must be {' or '.join(FINAL_TURNS)}")
        self.final_turn = final_turn
        context = int(getattr(coordinator.backbone, "context_tokens", MAX_PROMPT_TOKENS))
        self.max_prompt_tokens = (
            min(MAX_PROMPT_TOKENS, context) if max_prompt_tokens is None else max_prompt_tokens
        )
        if not 1 <= self.max_prompt_tokens <= context:
            raise ValueError(
                f"--max-prompt-tokens must be from 1 to the backbone's context, {context}"
            )
        self._tokenizer: Any = None  # a copy for counting prompts off the backbone's thread
        self._count_lock = threading.Lock()
        self._answering: set[asyncio.Task[Any]] = set()
        self.stopping = False  # set when the server stops: cancellations are the stop's
        self.cancelled = 0  # episodes cancelled before their end (a client left, a stop)
        self.prompts = prompts or Prompts.load()
        self.pool: list[Worker] = []
        self.run_id: str | None = None
        self.episodes = 0
        self._client: Any = None
        self._store: Store | None = None
        self._life: RunLife | None = None

    @property
    def model_id(self) -> str:
        """The name OpenAI clients ask for: ``trinity-`` and the run id or the file's stem."""
        if self.source.run_id is not None:
            return f"trinity-{self.source.run_id[:8]}"
        return f"trinity-{Path(str(self.source.coordinator_file)).stem}"

    def describe(self) -> dict[str, Any]:
        """The team as metadata: source, pool, backbone, turns (what ``/v1/models`` shows)."""
        return {
            "source": self.source.reference,
            "pool": list(self.source.pool),
            "backbone": self.source.backbone_model,
            "max_turns": self.max_turns,
            "final_turn": self.final_turn,
            "max_prompt_tokens": self.max_prompt_tokens,
            "serve_run": self.run_id,
        }

    async def start(self, client: Any = None) -> None:
        """Build the pool, open the store and record the ``serve`` run."""
        from workbench.core.workers.pool import build_pool
        from workbench.core.workers.transport import open_client

        self._client = client or open_client()
        self.pool = build_pool(
            self.source.config.pool.workers, client=self._client, workspace=self.workspace
        )
        ids = tuple(w.id for w in self.pool)
        if ids != self.source.pool:
            raise ValueError(
                f"the pool built now ({', '.join(ids)}) differs from the one the coordinator "
                f"was trained on ({', '.join(self.source.pool)}): re-register the workers"
            )
        for worker in self.pool:  # a missing local model or key: refused before serving
            await asyncio.to_thread(worker.prepare)
        self._store = Store.open(self.workspace)
        config = {
            **self.source.config.to_dict(),
            "serving": {
                **self.source.reference,
                "max_turns": self.max_turns,
                "final_turn": self.final_turn,
                "max_prompt_tokens": self.max_prompt_tokens,
            },
        }
        self._life = await asyncio.to_thread(
            RunLife.create, self._store, f"serve {self.model_id}", "serve", config
        )
        self.run_id = self._life.run_id
        await asyncio.to_thread(self._life.start)

    def prompt_tokens(self, task: Task) -> int:
        """How many tokens the coordinator would read for ``task`` at its first turn (the
        query as the transcript shows it, in the backbone's input format). Blocking:
        call it off the event loop. Counted with a copy of the backbone's tokenizer, one
        count at a time (a fast tokenizer is not safe to share between threads)."""
        backbone = self.coordinator.backbone
        text = render_transcript(task, [])
        with self._count_lock:
            if self._tokenizer is None:
                self._tokenizer = copy.deepcopy(backbone.tokenizer)
            tok = self._tokenizer
            # as Backbone.encode reads it (chat template or raw text), with this copy
            if backbone.input == "chat" and tok.chat_template:
                ids = tok.apply_chat_template(
                    [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True
                )
                if isinstance(ids, dict) or hasattr(ids, "keys"):
                    ids = ids["input_ids"]
                return len(ids)
            return len(tok(text)["input_ids"])

    async def check_prompt(self, task: Task) -> None:
        """Raise ``PromptTooLong`` when ``task`` exceeds the prompt budget; a text of no
        more UTF-8 bytes than the budget fits without being tokenized (a byte-level
        tokenizer spends at most one token per byte, less the template's few)."""
        if len(task.full_prompt().encode()) + 64 <= self.max_prompt_tokens:
            return
        tokens = await asyncio.to_thread(self.prompt_tokens, task)
        if tokens > self.max_prompt_tokens:
            raise PromptTooLong(tokens, self.max_prompt_tokens)

    async def answer(
        self,
        messages: Sequence[Message],
        *,
        kind: str = "text",
        seed: int | None = None,
        episode_id: str | None = None,
        listener: Listener | None = None,
    ) -> Episode:
        """Run one episode on the question ``messages`` ask, store it and return it.
        ``listener`` hears each turn as it happens. An episode cancelled midway (its client
        left, the server stopped) is stored with the turns it played, stop reason
        ``cancelled`` (one cancelled in its first turn is not stored), and the
        cancellation goes on. Raises ``PromptTooLong`` before any
        forward when the conversation exceeds the prompt budget."""
        if self._store is None:
            raise RuntimeError("the team is not started: call start() first")
        task = question_task(messages, kind)
        await self.check_prompt(task)
        coordinator: Any = self.coordinator
        pool: list[Worker] = self.pool
        if listener is not None:
            coordinator = _WatchedCoordinator(self.coordinator, self.source.pool, listener)
            pool = [_WatchedWorker(w, coordinator, listener) for w in self.pool]
        settings = EpisodeSettings.of(
            self.source.config.protocol,
            SUITE,
            prompts=self.prompts,
            max_turns=self.max_turns,
            final_turn=self.final_turn,
        )
        tag = EpisodeTag(run_id=self.run_id, episode_id=episode_id or uuid.uuid4().hex)
        played: list[Turn] = []
        current = asyncio.current_task()
        if current is not None:
            self._answering.add(current)
        try:
            episode = await run_episode(
                coordinator,
                pool,
                task,
                settings,
                rng=None,  # argmax acting, as in evaluation
                seed=seed,
                tag=tag,
                on_turn=played.append,
            )
        except asyncio.CancelledError:
            self._store_cancelled(task, tag, seed, played)
            raise
        finally:
            if current is not None:
                self._answering.discard(current)
        details: dict[str, Any] = {"reason": NOT_GRADED}
        for key in ("worker_only_turns", "thinker_role_turns"):
            if key in episode.grade_details:
                details[key] = episode.grade_details[key]
        episode = replace(episode, reward=0.0, grade_details=details)
        await asyncio.to_thread(self._store.add_episode, episode)
        self.episodes += 1
        return episode

    def _store_cancelled(
        self, task: Task, tag: EpisodeTag, seed: int | None, played: Sequence[Turn]
    ) -> None:
        """Count a cancelled request and store the turns it played (on the caller's
        thread: a cancelled task should not wait on another); one cancelled before any
        turn ended stores nothing."""
        self.cancelled += 1
        if self._store is None or not played:
            return
        answers = [t.response for t in played if t.role is Role.WORKER and t.error is None]
        episode = Episode(
            id=tag.episode_id or uuid.uuid4().hex,
            suite=SUITE,
            task_id=task.id,
            pool=tuple(self.source.pool),
            max_turns=self.max_turns,
            turns=tuple(played),
            answer=answers[-1] if answers else None,
            reward=0.0,
            stop_reason=StopReason.CANCELLED,
            grade_details={"reason": CANCELLED},
            seed=seed,
            run_id=tag.run_id,
            created_at=time.time(),
        )
        try:
            self._store.add_episode(episode)
        except Exception:  # the store closing under a stop: say so, lose nothing else
            log.exception("could not store the cancelled episode %s", episode.id)
            return
        self.episodes += 1

    async def cancel_answers(self) -> int:
        """Cancel the episodes still running (their turns are stored, cancelled) and wait
        for them to let go; returns how many there were."""
        tasks = [t for t in self._answering if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)
        return len(tasks)

    async def aclose(self, stop_reason: RunStopReason = RunStopReason.DONE) -> None:
        """Cancel what still runs (stored, cancelled), close the pool and its client;
        end the ``serve`` run for ``stop_reason`` (``RunLife``: finished, stopped or
        failed)."""
        await self.cancel_answers()
        for worker in self.pool:
            await worker.aclose()
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._store is not None:
            if self._life is not None and self._life.ended is None:
                await asyncio.to_thread(
                    self._life.end,
                    stop_reason,
                    {"episodes": self.episodes, "cancelled": self.cancelled},
                )
            self._store.close()
            self._store = None


def refuse_unservable(pool: Sequence[str]) -> None:
    """Raises ``InvalidInput`` for a pool whose workers are all recorded: a recorded
    worker looks its answer up by question id, so a team of them answers no request."""
    if pool and all(is_recorded(w) for w in pool):
        raise InvalidInput(
            f"the team's workers are all recorded ({', '.join(pool)}): a "
            "recorded worker answers only the questions of its recording, looked up by "
            "question id, so it has no answer to a request; serve a team trained on live "
            "workers, or ask this one in the Playground with the offline model answering "
            "in the recorded workers' place"
        )


def load_team(
    workspace: Workspace,
    *,
    run: str | None = None,
    coordinator_file: str | Path | None = None,
    backbone: Backbone | None = None,
    max_turns: int | None = None,
    final_turn: str = "worker",
    max_prompt_tokens: int | None = None,
    to_serve: bool = False,
) -> Team:
    """A trained run's best coordinator (``run``: id or prefix) or a coordinator file's,
    with the pool it was trained for; loads the backbone unless given. Raises
    ``RunNotFound``, ``ConfigError`` or ``CoordinatorFileError`` with a readable message;
    ``to_serve``: also ``InvalidInput`` for a team that answers no request
    (``refuse_unservable``), before the backbone loads."""
    source = evaluation_source(workspace, run=run, coordinator_file=coordinator_file)
    if to_serve:
        refuse_unservable(source.pool)
    backbone = backbone_for(source.config, backbone, source.backbone_model)
    with Store.open(workspace) as store:
        coordinator = source.coordinator(store, backbone)
    return Team(
        coordinator,
        source,
        workspace,
        max_turns=max_turns,
        final_turn=final_turn,
        max_prompt_tokens=max_prompt_tokens,
    )
