"""The Settings page: the workspace folder (applied at next start), the device and cache
policy new runs default to, and the theme (applied at once).

The page shows and edits a core ``Settings`` (``workbench.core.settings``), which owns
loading, validation and saving; each change is validated at once and saved at once, in a
background job (the file is read, and the code sandbox probed, in background jobs too:
never on the GUI thread).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from workbench.core.config import CACHE_POLICIES
from workbench.core.printable import shown_path
from workbench.core.settings import (
    DEVICES,
    THEMES,
    Settings,
    SettingsError,
    load_settings_or_defaults,
    save_settings,
    settings_path,
)
from workbench.core.workspace import Workspace
from workbench.gui import background
from workbench.gui.page import Page, message_label
from workbench.gui.qt import (
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
    Signal,
    application,
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


_theme = "system"  # the theme applied last (a change of the system's scheme re-applies it)
_following = False  # the system's colour scheme changes are listened to


def apply_theme(theme: str, scheme: Qt.ColorScheme | None = None) -> None:
    """Apply ``theme`` to the running application: ``system`` follows the OS's light or
    dark colour scheme (``QStyleHints.colorScheme``; ``scheme`` stands for it in tests),
    now and whenever it changes. Uses Qt's colour scheme where this Qt has it and the
    platform honours it, else a palette of ours. The plots follow the palette
    (``plots.follow_palette``)."""
    global _theme, _following
    app = application()
    if app is None:
        return
    _theme = theme
    hints = app.styleHints()
    if not _following and hasattr(hints, "colorSchemeChanged"):
        hints.colorSchemeChanged.connect(_on_system_scheme)
        _following = True
    if theme == "system":
        if hasattr(hints, "unsetColorScheme"):
            hints.unsetColorScheme()
        app.setPalette(QPalette())  # drop any palette of ours: back to the platform's
        if scheme is None:
            scheme = hints.colorScheme() if hasattr(hints, "colorScheme") else None
        # a platform that reports a dark (or light) scheme but keeps a palette of the
        # other kind (Fusion on some desktops): our palette of the scheme's kind
        if scheme in (Qt.ColorScheme.Dark, Qt.ColorScheme.Light):
            dark = scheme == Qt.ColorScheme.Dark
            if is_dark(app.palette()) != dark:
                app.setPalette(_palette(dark))
        return
    dark = theme == "dark"
    if hasattr(hints, "setColorScheme"):
        wanted = Qt.ColorScheme.Dark if dark else Qt.ColorScheme.Light
        hints.setColorScheme(wanted)
        if hints.colorScheme() == wanted:
            app.setPalette(QPalette())  # the platform's palette of that scheme ...
            if is_dark(app.palette()) == dark:
                return  # ... unless the style keeps one of the other kind
    app.setPalette(_palette(dark))  # Qt before 6.8, or a platform without colour schemes


def _on_system_scheme(scheme: Qt.ColorScheme) -> None:
    if _theme == "system":
        apply_theme("system", scheme)


def is_dark(palette: QPalette) -> bool:
    """Whether ``palette`` is a dark one (light text on a dark window)."""
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


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
    """The Settings page; ``workspace`` is the one open now. The settings file is read in
    the background: until it is, the page shows the defaults and nothing can be changed."""

    settings_read = Signal()  # the settings file was read (or found unreadable: the defaults)
    settings_saved = Signal(bool)  # a save ended: True when the file holds what is shown

    def __init__(self, workspace: Workspace, parent: QWidget | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self.path = settings_path()
        self.settings = Settings()  # what the page shows (and saves)
        self.saved: Settings | None = None  # what the file holds, once read
        self._saving = False  # a save is in flight (one at a time, in order)
        self._save_again = False  # changed while saving: save once more when it ends
        self._probing = False
        self._build()
        self._show()
        self._set_editable(False)
        self.saved_label.setText(f"Reading the settings file {shown_path(self.path)}…")
        path = self.path
        self.in_background(
            "read settings",
            lambda: load_settings_or_defaults(path),
            self._on_read,
            self._on_read_failed,
        )

    @property
    def loaded(self) -> bool:
        """The settings file has been read: the page shows it and takes changes."""
        return self.saved is not None

    def _on_read(self, _context: Any, read: tuple[Settings, str | None]) -> None:
        settings, problem = read
        self.settings = self.saved = settings
        self._set_editable(True)
        self._show()
        if problem:  # a file that cannot be used: the defaults, and the file is kept
            self.show_error(problem)
        self.settings_read.emit()

    def _on_read_failed(self, _context: Any, exc: Exception) -> None:
        self.saved = Settings()
        self._set_editable(True)
        self._show()
        self.show_error(
            f"Cannot read the settings file {shown_path(self.path)}: {background.readable(exc)}. "
            "Using the default settings; the file was left as it is."
        )
        self.settings_read.emit()

    def _set_editable(self, editable: bool) -> None:
        for w in (
            self.open_button,
            self.default_button,
            self.device_combo,
            self.cache_combo,
            self.theme_combo,
        ):
            w.setEnabled(editable)

    def _build(self) -> None:
        self.workspace_label = QLabel(shown_path(self.workspace.root, short=True))
        self.workspace_label.setToolTip(str(self.workspace.root))
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
            QLabel("Used by new runs whose own settings choose no device or response cache."),
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
        """Probe the code sandbox when the page is first shown (it starts a process: in
        the background)."""
        super().showEvent(event)
        if self.isolation_label.text() == "checking…" and not self._probing:
            self._probing = True
            self.in_background(
                "probe the code sandbox",
                isolation_text,
                self._on_probed,
                self._on_probe_failed,
            )

    def _on_probed(self, _context: Any, said: tuple[str, str]) -> None:
        text, details = said
        self.isolation_label.setText(text)
        self.isolation_label.setToolTip(details)

    def _on_probe_failed(self, _context: Any, exc: Exception) -> None:
        self.isolation_label.setText(
            f"Cannot tell whether generated programs run isolated: {background.readable(exc)}"
        )

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
            self.next_workspace_label.setText(f"At start: {shown_path(chosen, short=True)}.")
        else:
            self.next_workspace_label.setText(
                f"At next start: {shown_path(chosen, short=True)}. Restart the workbench to open it."
            )
        self.next_workspace_label.setToolTip(str(chosen) if chosen else "")
        self.saved_label.setText(f"Settings file: {shown_path(self.path, short=True)}")
        self.saved_label.setToolTip(str(self.path))

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
        """Validate and show at once (the theme applies at once), then save in the
        background. False, with the key named on the page, for a value that is refused
        (or while the file is still being read): nothing is saved then."""
        if not self.loaded:
            self.show_error("The settings file is still being read: change it once it shows.")
            self._show()
            return False
        try:
            settings = self.settings.replace(**changes)
        except SettingsError as exc:
            self.show_error(f"Settings not saved: {exc}")
            self._show()  # back to what is shown
            return False
        self.message_label.clear()
        theme_changed = settings.theme != self.settings.theme
        self.settings = settings
        self._show()
        if theme_changed:
            apply_theme(settings.theme)
        self._save()
        return True

    def _save(self) -> None:
        """Save what the page shows; saves run one at a time, in the order of the changes
        (a change made while one is saved is saved after it)."""
        if self._saving:
            self._save_again = True
            return
        self._saving = True
        settings, path = self.settings, self.path
        self.saved_label.setText(f"Saving to {shown_path(path)}…")
        self.in_background(
            "save settings",
            lambda: save_settings(settings, path),
            self._on_saved,
            self._on_save_failed,
            context=settings,
        )

    def _on_saved(self, settings: Settings, _path: Any) -> None:
        self._saving = False
        self.saved = settings
        if self._save_again:
            self._save_again = False
            self._save()
            return
        self.saved_label.setText(f"Saved to {shown_path(self.path)}")
        self.settings_saved.emit(True)

    def _on_save_failed(self, settings: Settings, exc: Exception) -> None:
        """Nothing of this change is lost silently: the page says it was not saved and goes
        back to what the file holds."""
        self._saving = self._save_again = False
        self.show_error(
            f"Settings not saved: cannot write {shown_path(self.path)}: {background.readable(exc)}"
        )
        theme_changed = self.saved is not None and self.saved.theme != self.settings.theme
        self.settings = self.saved if self.saved is not None else Settings()
        self._show()
        self.saved_label.setText(f"Settings file: {shown_path(self.path)}")
        if theme_changed:
            apply_theme(self.settings.theme)
        self.settings_saved.emit(False)


def isolation_text() -> tuple[str, str]:
    """What the Settings page says about running generated code on this machine: a
    sentence in plain words, and the technical details (its tooltip)."""
    from workbench.core.tasks.sandbox import UNISOLATED_ENV, detect_isolation, unisolated_allowed

    isolation = detect_isolation()
    details = f"{isolation.detail}."
    if isolation.isolated:
        return (
            "Programs written for code questions run in a sandbox (bubblewrap): cut off "
            "from the network and from your files.",
            f"Generated programs run isolated: {details}",
        )
    if unisolated_allowed():
        return (
            f"NOT ISOLATED: {isolation.detail}. Code tasks run anyway, with your user's "
            f"rights, because {UNISOLATED_ENV}=1 is set.",
            details,
        )
    return (
        f"NOT ISOLATED: {isolation.detail}. Code tasks are refused; to run generated code "
        f"with your user's rights anyway, start the workbench with {UNISOLATED_ENV}=1.",
        details,
    )


def _combo(values: tuple[str, ...], labels: dict[str, str]) -> QComboBox:
    combo = QComboBox()
    for value in values:
        combo.addItem(labels.get(value, value), value)
    return combo
