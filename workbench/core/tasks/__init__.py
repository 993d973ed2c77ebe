"""Tasks, graders, the code sandbox and suites."""

from workbench.core.tasks.graders import grade
from workbench.core.tasks.jsonl import (
    SuiteValidationError,
    ValidationIssue,
    load_jsonl,
    write_jsonl,
)
from workbench.core.tasks.model import Grade, Suite, Task, TaskNotFound
from workbench.core.tasks.sandbox import SandboxError, SandboxResult, run_program
from workbench.core.tasks.suites import (
    BUNDLED,
    SuiteInfo,
    SuiteNotFound,
    import_suite,
    list_suites,
    load_suite,
)

__all__ = [
    "BUNDLED",
    "Grade",
    "SandboxError",
    "SandboxResult",
    "Suite",
    "SuiteInfo",
    "SuiteNotFound",
    "SuiteValidationError",
    "Task",
    "TaskNotFound",
    "ValidationIssue",
    "grade",
    "import_suite",
    "list_suites",
    "load_jsonl",
    "load_suite",
    "run_program",
    "write_jsonl",
]
