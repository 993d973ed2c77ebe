"""Real answers from a simulated team: the Playground's "let the offline model answer".

The simulated workers answer only the bundled suites' questions (anything else gets "I am
not sure."). Here each simulated worker's row of a trained team is answered by one real
local model instead: the coordinator still picks the row (the specialist it learned to
ask, in the role it chose), the local model writes the reply. The stand-in's id says both
(``local:smollm2 as sandbox:coder``), so the turns, the stored episode and its replay never
pass the local model's words off as the simulation's, nor the reverse."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.core.spend import is_simulated
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


def stand_in(pool: Sequence[Worker], inner: Worker) -> list[Worker]:
    """The pool with each simulated worker answered by ``inner``; real workers stay."""
    return [StandIn(w.id, inner) if is_simulated(w.id) else w for w in pool]
