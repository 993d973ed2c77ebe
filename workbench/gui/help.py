"""The Help menu's content, without Qt: where the documentation is on this computer
(Help > Documentation) and what Help > About says.

The documentation is the project's site, built for reading offline into the package's
``resources/docs`` folder (``python packaging/docs_site.py``; the installers and a wheel
built after it carry it), opened from disk in the system browser: it needs no network. A
source checkout where the site was not built opens the Markdown pages of its ``docs``
folder instead, and says how to build the site.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import workbench
from workbench import __version__
from workbench.core.printable import shown_path
from workbench.core.workspace import Workspace, resources_dir

APP_NAME = "Trinity Workbench"
DISTRIBUTION = "trinity-workbench"
BUILD_SITE = "python packaging/docs_site.py"
SITE_INDEX = Path("docs") / "index.html"  # under the package's resources


@dataclass(frozen=True)
class Documentation:
    """What Help > Documentation opens: the built site's first page, or (a source
    checkout without it) the Markdown docs folder, with a note saying so."""

    path: Path
    site: bool
    note: str = ""


def find_documentation(
    resources: Path | None = None, checkout: Path | None = None
) -> Documentation | None:
    """The documentation on this computer (``resources``: the package's resources folder;
    ``checkout``: the source tree the package runs from), or None when there is none."""
    resources = resources_dir() if resources is None else resources
    site = resources / SITE_INDEX
    if site.is_file():
        return Documentation(site, site=True)
    checkout = Path(workbench.__file__).resolve().parents[1] if checkout is None else checkout
    pages = checkout / "docs"
    if (pages / "index.md").is_file() and (checkout / "mkdocs.yml").is_file():
        return Documentation(
            pages,
            site=False,
            note=(
                "The documentation site is not built in this source checkout, so its Markdown "
                f"pages open instead. To read it as a site, offline: {BUILD_SITE} "
                '(after pip install -e ".[docs]"), then Help > Documentation again.'
            ),
        )
    return None


NO_DOCUMENTATION = (
    "This installation has no documentation bundled with it. It is in the source "
    f"repository's docs folder; a build made with {BUILD_SITE} before packaging carries it."
)


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def licence() -> str:
    """The package's licence, as its metadata names it."""
    try:
        meta = metadata.metadata(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"
    for field in ("License-Expression", "License"):
        values = meta.get_all(field) or []
        if values and values[0]:
            return str(values[0])
    return "unknown"


def about_text(workspace: Workspace | None, qt: str, pyside: str, device: str = "checking…") -> str:
    """What Help > About says: the version, the licence, the workspace, the versions of
    what it runs on and the device the coordinator's model computes on."""
    where = "" if workspace is None else f"Workspace: {shown_path(workspace.root, short=True)}\n"
    return (
        f"{APP_NAME} {__version__}\n"
        f"Licence: {licence()}\n"
        f"{where}\n"
        f"Python {platform.python_version()}\n"
        f"torch {_version('torch')}\n"
        f"transformers {_version('transformers')}\n"
        f"Qt {qt} (PySide6 {pyside})\n"
        f"Device: {device}"
    )
