"""A team's rows that cannot answer a question of your own answered by a real worker (the
Playground's "let the offline model answer"): simulated and recorded rows are stood in
for, a worker that answers anything stays, each stand-in names both workers, and its
reply is the real worker's own."""

import asyncio

import pytest

from workbench.core.serving.standin import StandIn, stand_in
from workbench.core.workers.base import WorkerError
from workbench.core.workers.local import SMOLLM2_ID
from workbench.core.workers.pool import build_pool


def test_simulated_and_recorded_rows_are_answered_by_the_real_worker_and_say_so():
    (local,) = build_pool([SMOLLM2_ID])  # the real offline model, as the Playground uses
    sandbox = build_pool(["sandbox:coder", "sandbox:scholar"])
    recorded = build_pool(["recorded:champ/gpt-4-turbo"])
    (live,) = build_pool([SMOLLM2_ID])  # a worker that answers any question
    pool = [*sandbox, *recorded, live]

    stood = stand_in(pool, local)

    assert [type(w) for w in stood] == [StandIn, StandIn, StandIn, type(live)]
    assert stood[3] is live  # it keeps its own answers
    assert [w.id for w in stood[:3]] == [
        f"{local.id} as sandbox:coder",
        f"{local.id} as sandbox:scholar",
        f"{local.id} as recorded:champ/gpt-4-turbo",
    ]
    coder = stood[0]
    assert isinstance(coder, StandIn) and coder.row_id == "sandbox:coder"

    async def replies():
        local.prepare()
        try:
            messages = [{"role": "user", "content": "What is 12 + 30?"}]
            own = await local.complete(messages, max_tokens=6, temperature=0.0, seed=0)
            through = await coder.complete(messages, max_tokens=6, temperature=0.0, seed=0)
            return own, through
        finally:
            await local.aclose()

    own, through = asyncio.run(replies())
    # greedy decoding: the stand-in's reply is the local model's, word for word
    assert through.text and through.text == own.text
    # the simulated and recorded workers it stands in for answer nothing outside a
    # suite's episode
    for worker in (sandbox[0], recorded[0]):
        with pytest.raises(WorkerError, match="only inside an episode"):
            asyncio.run(
                worker.complete([{"role": "user", "content": "hi"}], max_tokens=6, temperature=0.0)
            )
