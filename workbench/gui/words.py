"""The user's words: what the GUI says instead of identifiers. Stop reasons, roles,
statuses and workers as sentences (the run config's labels and help live with its keys,
in ``core.config``; paths are shortened by ``core.printable.shown_path``, and workers'
shared prefix said once by ``core.printable.shared_prefix``). Qt-free (tables and a few
functions), so that a test or another front end can read the same words; the identifier
stays available as a tooltip."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.core.printable import shared_prefix

KEYCHAIN_HELP = "docs/guides/workers.md#no-keychain"


def keychain_sentence(env: str | None) -> str:
    """Why a key cannot be stored here, in one sentence, and what to do instead."""
    instead = (
        f"put the key in the environment variable {env} before starting the workbench"
        if env
        else "give the worker a key_env (an environment variable holding the key)"
    )
    return (
        "this computer has no secure keychain to keep an API key in (the workbench never "
        f"writes a key to a file): sign in to a desktop session with a keyring, or {instead}. "
        f"How: {KEYCHAIN_HELP}."
    )


# ---------------------------------------------------------------------------- workers


def worker_words(worker_id: str) -> str:
    """What a worker id in a pool stands for, in a sentence: simulated teams and workers
    are said to be simulations (they answer only the bundled suites' questions)."""
    if worker_id == "sandbox":
        return (
            "the simulated team: three made-up specialists (maths, knowledge, code); "
            "offline and free, it answers only the bundled suites' questions"
        )
    if worker_id == "team":
        return (
            "the simulated multi-turn team: workers that plan, answer and check; offline "
            "and free, it answers only the bundled suites' questions"
        )
    if worker_id.startswith(("sandbox:", "team:")):
        return "one simulated worker (offline, free); it answers only the bundled suites' questions"
    if worker_id.startswith("local:"):
        return "a real language model running on this computer (free, slow on a CPU)"
    return "a registered worker: a real model, whose calls may cost money"


def plural(count: int, word: str) -> str:
    """``1 episode``, ``2 episodes``."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def pool_words(pool: Sequence[str], listed: int | None = None) -> str:
    """A pool in a line: its workers' ids, a ``shared_prefix`` said once before them
    (``recorded:small-6/ (Meta-Llama-3_1-8B-Instruct, gemma-7b)``); a pool of more than
    ``listed`` workers by their count alone (``recorded:small-6/ (6 workers)``), for a
    page that lists them elsewhere."""
    prefix = shared_prefix(pool)
    if listed is not None and len(pool) > listed:
        names = plural(len(pool), "worker")
    else:
        names = ", ".join(w.removeprefix(prefix) for w in pool)
    return f"{prefix} ({names})" if prefix else names


# ---------------------------------------------------------------------------- roles

ROLE_NAMES = {"thinker": "Thinker", "worker": "Worker", "verifier": "Verifier"}
ROLE_SENTENCES = {
    "thinker": "Thinker: plans or points out what to do next; gives no final answer",
    "worker": "Worker: answers the question (its answer is the one graded)",
    "verifier": "Verifier: checks the latest answer, then accepts it or asks for a revision",
}


def role_name(role: str) -> str:
    return ROLE_NAMES.get(str(role), str(role))


# ---------------------------------------------------------------------------- stop reasons

# why an episode ended (records.StopReason) and why a run ended (the trainer's reasons)
STOP_REASONS = {
    "accepted": "A Verifier accepted the answer",
    "max_turns": "It used all its turns",
    "verifier_without_answer": "A Verifier was asked before anyone had answered",
    "worker_errors": "Every call to a worker failed",
    "cancelled": "It was cancelled before the end",
    "budget.generations": "It ran all its generations",
    "budget.episodes": "It used its budget of episodes",
    "budget.calls": "It used its budget of worker calls",
    "budget.dollars": "It used its budget of dollars",
    "budget.minutes": "It used its budget of time",
    "stopped": "Stopped by you (it can be resumed)",
    "error": "It failed with an error",
    "done": "Done",
    "shutdown": "The server was shut down",
}


def stop_sentence(reason: str | None) -> str:
    """Why an episode or a run ended, as a person says it (the identifier for a tooltip
    stays ``reason``). Unknown reasons are shown as they are."""
    if not reason:
        return ""
    return STOP_REASONS.get(str(reason), str(reason))


# ---------------------------------------------------------------------------- scores

# the method's terms, in words a newcomer reads (the term itself in the tooltip)
SCORE_HELP = (
    "Training score (the method's \"fitness\"): a candidate coordinator's share of right "
    "answers on the generation's few training questions. With many candidates and few "
    "questions the best one is often lucky, so it reads higher than validation."
)
VALIDATION_HELP = (
    "Validation: the search's centre, the coordinator the run keeps, scored on held-out "
    "questions it never trains on: the figure to trust."
)
STEP_SIZE_HELP = (
    "Step size (the method's \"sigma\"): how far the search's candidates lie from its "
    "centre. It shrinks as the search settles on what works."
)
EXECUTOR_HELP = (
    "Where the run's episodes are played. Empty: on this computer, in the training "
    "process. On Ray (the run's executor setting): Ray spreads the episodes over worker "
    "processes, its actors, on this computer or on a cluster's machines (its nodes)."
)
SCORES_CAPTION = (
    "Training score: each candidate's share right on a few training questions (the best "
    "of many can be lucky). Validation: the kept coordinator on held-out questions."
)


def score_words(score: float) -> str:
    """A training score as a newcomer reads it: ``training score 75%``."""
    return f"training score {score:.0%}"


STATUS_WORDS = {
    "running": "running",
    "finished": "finished",
    "stopped": "stopped (can resume)",
    "interrupted": "interrupted (can resume)",
    "failed": "failed (can resume)",
}


def status_words(status: str) -> str:
    return STATUS_WORDS.get(status, status)
