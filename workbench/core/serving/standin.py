"""Real answers from a team that cannot answer a question of your own: the Playground's
"let the offline model answer".

A simulated worker answers only the bundled suites' questions (anything else gets "I am
not sure."), a recorded one only the questions of its recording (anything else has no
answer). Here each such worker's row of a trained team is answered by one real local model
instead: the coordinator still picks the row (the specialist it learned to ask, in the
role it chose), the local model writes the reply. The stand-in's id says both
(``local:smollm2 as sandbox:coder``), so the turns, the stored episode and its replay never
pass the local model's words off as the simulation's or the recording's, nor the reverse."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.core.spend import is_recorded, is_simulated
from workbench.core.workers.base import Completion, EpisodeContext, Message, Worker


class StandIn(Worker):
    """Row ``row_id`` of a pool answered by ``inner`` (shared by every stand-in of a pool;
    its owner prepares and closes it)."""

    provider = "stand-in"

    def __init__(self, row_id: str, inner: Worker):
        super().__init__(f"{inner.id} as {row_id}", inner.model)
        self.row_id = row_id
        self.inner = inner

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
        context: EpisodeContext | None = None,
    ) -> Completion:
        return await self.inner.complete(
            messages, max_tokens=max_tokens, temperature=temperature, seed=seed, context=context
        )


def answers_only_known_questions(worker_id: str) -> bool:
    """Whether a worker answers only questions it already holds: a simulated one (the
    bundled suites') or a recorded one (its recording's), never a question of your own."""
    return is_simulated(worker_id) or is_recorded(worker_id)


def stand_in(pool: Sequence[Worker], inner: Worker) -> list[Worker]:
    """The pool with each simulated or recorded worker answered by ``inner``; workers that
    answer any question (a local model, an API) stay."""
    return [StandIn(w.id, inner) if answers_only_known_questions(w.id) else w for w in pool]
