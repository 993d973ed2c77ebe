"""Tasks, graders, the code sandbox and suites."""
