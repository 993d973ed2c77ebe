"""The user's words: what the GUI says instead of identifiers. Plain-word labels and help
for the run config's keys, stop reasons and roles as sentences, and paths shortened to
the workspace or ``~``. Qt-free (a table and a few functions), so that a test or another
front end can read the same words; the identifier stays available as a tooltip."""

from __future__ import annotations

from pathlib import Path


def short_path(path: str | Path, workspace: Path | None = None) -> str:
    """A path as a person reads it: inside the workspace relative to it (``workspace/…``),
    inside the home folder with ``~``; else as it is. The full path belongs in a tooltip."""
    path = Path(path)
    if workspace is not None:
        try:
            inside = path.resolve().relative_to(workspace.resolve())
        except (ValueError, OSError):
            pass
        else:
            return "workspace" if str(inside) == "." else f"workspace/{inside}"
    try:
        return f"~/{path.relative_to(Path.home())}"
    except ValueError:
        return str(path)


KEYCHAIN_HELP = "docs/guides/gui.md#no-keychain"


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
    "failed": "It failed",
}


def stop_sentence(reason: str | None) -> str:
    """Why an episode or a run ended, as a person says it (the identifier for a tooltip
    stays ``reason``). Unknown reasons are shown as they are."""
    if not reason:
        return ""
    return STOP_REASONS.get(str(reason), str(reason))


STATUS_WORDS = {
    "running": "running",
    "finished": "finished",
    "stopped": "stopped (can resume)",
    "interrupted": "interrupted (can resume)",
    "failed": "failed (can resume)",
}


def status_words(status: str) -> str:
    return STATUS_WORDS.get(status, status)


# ---------------------------------------------------------------------------- config keys

# every key of the run config: (label, help). The help is what the key does, in words a
# newcomer follows; the key itself is in the tooltip too, for the TOML file and the CLI.
CONFIG_WORDS: dict[str, tuple[str, str]] = {
    "run.name": ("Name", "A name for the run, shown in the runs list."),
    "run.seed": (
        "Random seed",
        "Runs with the same settings and seed give the same result; change it to try again "
        "with different luck.",
    ),
    "backbone.model": (
        "Language model read by the coordinator",
        "The small language model whose reading of the conversation the coordinator uses "
        "to decide. 'offline' is the bundled SmolLM2-135M (no download).",
    ),
    "backbone.device": (
        "Compute on",
        "Where the language model runs: auto picks a GPU when there is one, else the CPU.",
    ),
    "backbone.precision": (
        "Number precision",
        "auto is fastest where it is safe; fp32 is exact and slower; bf16 halves memory.",
    ),
    "backbone.input": (
        "How the conversation is read",
        "raw: the conversation's text as it is (as the paper); chat: wrapped in the "
        "model's chat format.",
    ),
    "pool.workers": (
        "Workers in the team",
        "The models the coordinator can ask. 'sandbox' and 'team' are simulated teams "
        "(offline, free, answering only the bundled suites' questions).",
    ),
    "tasks.suite": ("Question suite", "The set of questions with known answers to learn on."),
    "tasks.train": (
        "Training questions",
        "How many of the suite's training questions to use (0: all of them).",
    ),
    "tasks.validation": (
        "Validation questions",
        "Questions never trained on, used to pick the best coordinator (0: all).",
    ),
    "tasks.test": (
        "Test questions",
        "Questions kept for the final evaluation on the Evaluate page (0: all).",
    ),
    "tasks.split_seed": (
        "Split seed",
        "Decides which questions go to training, validation and test.",
    ),
    "optimizer.name": (
        "Search method",
        "sep-cma-es (the paper's evolution strategy), random search, REINFORCE or "
        "imitation of the best single worker.",
    ),
    "optimizer.popsize": (
        "Candidates per generation",
        "How many candidate coordinators each generation tries (0: chosen from the size "
        "of the coordinator).",
    ),
    "optimizer.sigma0": (
        "Initial step size",
        "How far the first candidates lie from the starting point (sigma at the start).",
    ),
    "optimizer.sigma0_scale": (
        "Step size measured",
        "literal: as given (the paper); width: scaled to the language model's size.",
    ),
    "optimizer.rollouts": (
        "Questions per candidate",
        "How many training questions each candidate answers per generation.",
    ),
    "optimizer.svf": (
        "Also tune the language model (SVF)",
        "Also search small changes to one layer of the language model, not just the "
        "coordinator's head.",
    ),
    "optimizer.svf_layer": ("SVF layer", "Which layer SVF changes (-2: the second to last)."),
    "optimizer.validate_every": (
        "Validate every (generations)",
        "How often the search's centre is scored on the validation questions.",
    ),
    "optimizer.cost_penalty": (
        "Penalty per dollar",
        "Subtracted from a question's reward for each dollar its episode cost.",
    ),
    "optimizer.turn_penalty": (
        "Penalty per turn",
        "Subtracted from a question's reward for each turn its episode took.",
    ),
    "optimizer.learning_rate": (
        "Learning rate",
        "Step size of REINFORCE and imitation (the evolution strategies do not use it).",
    ),
    "optimizer.search_basis": (
        "Search directions",
        "identity: the coordinator's own weights (the paper); balanced or whitened: "
        "directions fitted to the language model's features, often faster.",
    ),
    "optimizer.search_rank": (
        "Whitened directions",
        "How many directions the whitened search basis keeps.",
    ),
    "optimizer.concurrency": (
        "Episodes at once",
        "How many episodes run at the same time (0: all of a generation).",
    ),
    "optimizer.diversity_bonus": (
        "Bonus for asking two workers",
        "Added to the reward when an episode asked two or more different workers.",
    ),
    "optimizer.turn_bonus": ("Bonus per turn", "Added to the reward for each turn taken."),
    "optimizer.restarts": (
        "Restarts",
        "Split the generations into this many fresh starts plus one; the best is kept.",
    ),
    "optimizer.exploring_starts": (
        "Exploring starts (generations)",
        "Over the first N generations the first turn is sometimes chosen at random, so the "
        "search sees what pays after every opening (0: off).",
    ),
    "budget.generations": ("Generations", "How many rounds of trying candidates."),
    "budget.episodes": ("Most episodes", "Stop after this many episodes (0: no limit)."),
    "budget.calls": ("Most worker calls", "Stop after this many calls to workers (0: no limit)."),
    "budget.dollars": (
        "Most dollars",
        "Stop once the workers' calls cost this much (0: no limit).",
    ),
    "budget.minutes": ("Most minutes", "Stop after this much time (0: no limit)."),
    "protocol.max_turns": (
        "Turns per question",
        "At most this many turns (worker calls) per question; 1: the coordinator only "
        "picks who answers.",
    ),
    "protocol.temperature": (
        "Workers' temperature",
        "0: the workers answer the same way each time; higher: more varied answers.",
    ),
    "protocol.max_tokens": ("Longest reply (tokens)", "The longest reply a worker may write."),
    "protocol.thinker_suggests_role": (
        "Thinker picks the next role",
        "A Thinker's 'Next role: X' line decides the next turn's role.",
    ),
    "cache.policy": (
        "Reuse recorded replies",
        "auto: reuse replies at temperature 0; off: always call; read-write: reuse and "
        "record; replay-only: never call, recorded replies only.",
    ),
}


def config_label(key: str) -> str:
    return CONFIG_WORDS[key][0] if key in CONFIG_WORDS else key


def config_help(key: str) -> str:
    """The tooltip of a config field: what it does, then its key in the config file."""
    text = CONFIG_WORDS[key][1] if key in CONFIG_WORDS else ""
    return f"{text}\n\nIn a config file: [{key.split('.')[0]}] {key.split('.')[1]}".strip()
