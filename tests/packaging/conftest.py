"""The tests of a built AppImage (test_built_appimage.py) run after the bundle is built:
``.ci/run`` names the file with TRINITY_BUILT_APPIMAGE set. The README's test command,
which runs before any build, does not collect them (rather than report them skipped)."""

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

collect_ignore = [] if os.environ.get("TRINITY_BUILT_APPIMAGE") else ["test_built_appimage.py"]


@pytest.fixture()
def user_dir() -> Iterator[Path]:
    """A folder under /tmp that uid 1000 can use (pytest's own are the builder's only)."""
    base = Path(tempfile.mkdtemp(prefix="trinity-appimage-"))
    base.chmod(0o777)
    yield base
    shutil.rmtree(base)
