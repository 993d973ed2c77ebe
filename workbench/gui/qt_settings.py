"""The Settings page: the workspace folder (applied at next start), the device and cache
policy new runs default to, and the theme (applied at once).

The page shows and edits a core ``Settings`` (``workbench.core.settings``), which owns
loading, validation and saving; each change is saved at once.
"""

from __future__ import annotations

import logging
from pathlib import Path

from workbench.core.config import CACHE_POLICIES
from workbench.core.settings import (
    DEVICES,
    THEMES,
    SettingsError,
    load_settings_or_defaults,
    save_settings,
    settings_path,
)
from workbench.core.workspace import Workspace
from workbench.gui.page import Page, message_label
from workbench.gui.qt import (
    QApplication,
    QColor,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPalette,
    QPushButton,
    Qt,
    QVBoxLayout,
    QWidget,
)

log = logging.getLogger(__name__)

DEVICE_NOTES = {
    "auto": "auto (CUDA when present, else CPU)",
    "cpu": "cpu",
    "cuda": "cuda (NVIDIA GPU)",
    "mps": "mps (Apple GPU)",
}
CACHE_NOTES = {
    "auto": "auto (read-write at temperature 0, else off)",
    "off": "off",
    "read-write": "read-write (reuse recorded replies, record new ones)",
    "replay-only": "replay-only (recorded replies only, no network)",
}
THEME_NAMES = {"system": "System", "light": "Light", "dark": "Dark"}


def apply_theme(theme: str) -> None:
    """Apply ``theme`` to the running application: ``system`` follows the OS. Uses Qt's
    colour scheme where this Qt has it and the platform honours it, else a palette."""
    app = QApplication.instance()
    if app is None:
        return
    hints = app.styleHints()
    if theme == "system":
        if hasattr(hints, "unsetColorScheme"):
            hints.unsetColorScheme()
        app.setPalette(QPalette())  # drop any palette of ours: back to the platform's
        return
    dark = theme == "dark"
    if hasattr(hints, "setColorScheme"):
        wanted = Qt.ColorScheme.Dark if dark else Qt.ColorScheme.Light
        hints.setColorScheme(wanted)
        if hints.colorScheme() == wanted:
            app.setPalette(QPalette())
            return
    app.setPalette(_palette(dark))  # Qt before 6.8, or a platform without colour schemes


def _palette(dark: bool) -> QPalette:
    role, group = QPalette.ColorRole, QPalette.ColorGroup
    if dark:
        colors = {
            role.Window: "#2b2b2b",
            role.WindowText: "#e6e6e6",
            role.Base: "#1e1e1e",
            role.AlternateBase: "#2f2f2f",
            role.ToolTipBase: "#3a3a3a",
            role.ToolTipText: "#e6e6e6",
            role.Text: "#e6e6e6",
            role.Button: "#353535",
            role.ButtonText: "#e6e6e6",
            role.BrightText: "#ff5555",
            role.Highlight: "#2f6db5",
            role.HighlightedText: "#ffffff",
            role.Link: "#6ea8fe",
            role.PlaceholderText: "#8c8c8c",
        }
        disabled = "#7a7a7a"
    else:
        colors = {
            role.Window: "#efefef",
            role.WindowText: "#1a1a1a",
            role.Base: "#ffffff",
            role.AlternateBase: "#f5f5f5",
            role.ToolTipBase: "#ffffdc",
            role.ToolTipText: "#1a1a1a",
            role.Text: "#1a1a1a",
            role.Button: "#efefef",
            role.ButtonText: "#1a1a1a",
            role.BrightText: "#d00000",
            role.Highlight: "#3874d8",
            role.HighlightedText: "#ffffff",
            role.Link: "#0b57d0",
            role.PlaceholderText: "#8a8a8a",
        }
        disabled = "#a0a0a0"
    palette = QPalette()
    for r, color in colors.items():
        palette.setColor(r, QColor(color))
    for r in (role.WindowText, role.Text, role.ButtonText):
        palette.setColor(group.Disabled, r, QColor(disabled))
    return palette


class QtSettings(Page):
    """The Settings page; ``workspace`` is the one open now."""

    def __init__(self, workspace: Workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.path = settings_path()
        self.settings, problem = load_settings_or_defaults(self.path)
        self._build()
        self._show()
        if problem:
            self.show_error(problem)

    def _build(self) -> None:
        self.workspace_label = QLabel(str(self.workspace.root))
        self.workspace_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.next_workspace_label = QLabel()
        self.next_workspace_label.setWordWrap(True)
        self.open_button = QPushButton("Open…")
        self.default_button = QPushButton("Use the default")
        self.open_button.clicked.connect(self._choose_workspace)
        self.default_button.clicked.connect(lambda: self.choose_workspace(None))
        workspace_row = QHBoxLayout()
        workspace_row.addWidget(self.workspace_label, 1)
        workspace_row.addWidget(self.open_button)
        workspace_row.addWidget(self.default_button)

        self.device_combo = _combo(DEVICES, DEVICE_NOTES)
        self.cache_combo = _combo(CACHE_POLICIES, CACHE_NOTES)
        self.theme_combo = _combo(THEMES, THEME_NAMES)
        self.device_combo.currentIndexChanged.connect(
            lambda _: self._change(device=self.device_combo.currentData())
        )
        self.cache_combo.currentIndexChanged.connect(
            lambda _: self._change(cache_policy=self.cache_combo.currentData())
        )
        self.theme_combo.currentIndexChanged.connect(
            lambda _: self._change(theme=self.theme_combo.currentData())
        )

        workspace_box = QGroupBox("Workspace")
        form = QFormLayout(workspace_box)
        form.addRow("Open now", workspace_row)
        form.addRow("", self.next_workspace_label)
        runs_box = QGroupBox("New runs")
        form = QFormLayout(runs_box)
        form.addRow("Device", self.device_combo)
        form.addRow("Response cache", self.cache_combo)
        form.addRow(
            "",
            QLabel("Defaults for run configs that do not set [backbone] device or [cache] policy."),
        )
        look_box = QGroupBox("Appearance")
        form = QFormLayout(look_box)
        form.addRow("Theme", self.theme_combo)

        sandbox_box = QGroupBox("Code sandbox")
        self.isolation_label = QLabel("checking…")
        self.isolation_label.setWordWrap(True)
        self.isolation_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        QVBoxLayout(sandbox_box).addWidget(self.isolation_label)

        self.saved_label = QLabel()
        self.saved_label.setWordWrap(True)
        self.message_label = message_label()
        layout = QVBoxLayout(self)
        for w in (
            workspace_box,
            runs_box,
            look_box,
            sandbox_box,
            self.message_label,
            self.saved_label,
        ):
            layout.addWidget(w)
        layout.addStretch(1)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        """Probe the code sandbox when the page is first shown (it starts a process)."""
        super().showEvent(event)
        if self.isolation_label.text() == "checking…":
            self.isolation_label.setText(isolation_text())

    def _show(self) -> None:
        s = self.settings
        for combo, value in (
            (self.device_combo, s.device),
            (self.cache_combo, s.cache_policy),
            (self.theme_combo, s.theme),
        ):
            combo.blockSignals(True)
            combo.setCurrentIndex(combo.findData(value))
            combo.blockSignals(False)
        chosen = Path(s.workspace).expanduser().resolve() if s.workspace else None
        if chosen is None:
            self.next_workspace_label.setText(
                "At start: the default workspace (the user data folder)."
            )
        elif chosen == self.workspace.root:
            self.next_workspace_label.setText(f"At start: {chosen}.")
        else:
            self.next_workspace_label.setText(
                f"At next start: {chosen}. Restart the workbench to open it."
            )
        self.saved_label.setText(f"Settings file: {self.path}")

    # ------------------------------------------------------------------ editing

    def _choose_workspace(self) -> None:
        path = QFileDialog.getExistingDirectory(
            self, "Choose a workspace folder", str(self.workspace.root)
        )
        if path:
            self.choose_workspace(path)

    def choose_workspace(self, path: str | Path | None) -> bool:
        """Open ``path`` (None: the default) as the workspace at next start."""
        return self._change(workspace=str(Path(path).expanduser().resolve()) if path else None)

    def set_device(self, device: str) -> bool:
        return self._change(device=device)

    def set_cache_policy(self, policy: str) -> bool:
        return self._change(cache_policy=policy)

    def set_theme(self, theme: str) -> bool:
        return self._change(theme=theme)

    def _change(self, **changes: str | None) -> bool:
        """Validate, save and show; the theme applies at once."""
        try:
            settings = self.settings.replace(**changes)
            save_settings(settings, self.path)
        except (SettingsError, OSError) as exc:
            self.show_error(f"Settings not saved: {exc}")
            self._show()  # back to what is saved
            return False
        self.message_label.clear()
        theme_changed = settings.theme != self.settings.theme
        self.settings = settings
        self._show()
        self.saved_label.setText(f"Saved to {self.path}")
        if theme_changed:
            apply_theme(settings.theme)
        return True


def isolation_text() -> str:
    """What the Settings page says about running generated code on this machine."""
    from workbench.core.tasks.sandbox import UNISOLATED_ENV, detect_isolation, unisolated_allowed

    isolation = detect_isolation()
    if isolation.isolated:
        return f"Generated programs run isolated: {isolation.detail}."
    if unisolated_allowed():
        return (
            f"NOT ISOLATED: {isolation.detail}. Code tasks run anyway, with your user's "
            f"rights, because {UNISOLATED_ENV}=1 is set."
        )
    return (
        f"NOT ISOLATED: {isolation.detail}. Code tasks are refused; to run generated code "
        f"with your user's rights anyway, start the workbench with {UNISOLATED_ENV}=1."
    )


def _combo(values: tuple[str, ...], labels: dict[str, str]) -> QComboBox:
    combo = QComboBox()
    for value in values:
        combo.addItem(labels.get(value, value), value)
    return combo
