"""The worker dialog of the Workers page: add a worker or edit one, with a masked key
field (a stored key is never shown) and the models an endpoint lists, read in the
background. The spec and the key are stored through core's ``Registry``."""

from __future__ import annotations

from workbench.core.keychain import KeychainUnavailable, KeyStatus, clean_key
from workbench.core.workers.checks import endpoint_models
from workbench.core.workers.registry import Registry
from workbench.core.workers.spec import PRESETS, WorkerSpec, spec_from_options
from workbench.gui import background
from workbench.gui.page import ErrorLabel
from workbench.gui.qt import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    Qt,
    QVBoxLayout,
    QWidget,
    Signal,
    text_view,
)
from workbench.gui.words import keychain_sentence

PROVIDER_CHOICES = (*PRESETS, "local")  # presets fill the base URL; "local" is an in-process model
# Fields the dialog does not show: an edit keeps them as they are in workers.toml.
KEPT_FIELDS = ("temperature", "max_tokens", "extra", "context_window", "rpm", "timeouts", "key_env")


class WorkerDialog(QDialog):
    """Add a worker, or edit one (``spec``). The key field is masked; a stored key is never
    shown: the dialog says so and offers "Replace key" instead."""

    saved = Signal(str)  # the worker id, once its spec (and key) are stored

    def __init__(
        self,
        registry: Registry,
        spec: WorkerSpec | None = None,
        key_status: KeyStatus | None = None,
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.registry = registry
        self.spec = spec
        self._owner = parent or self  # jobs belong to the page, which outlives the dialog
        self.setWindowTitle(f"Edit worker {spec.id}" if spec else "Add worker")
        self.setMinimumWidth(560)

        self.worker_id = QLineEdit(spec.id if spec else "")
        self.worker_id.setPlaceholderText("e.g. gpt-mini (letters, digits, '.', '_', '-')")
        self.worker_id.setReadOnly(spec is not None)
        self.provider = QComboBox()
        self.provider.addItems(PROVIDER_CHOICES)
        self.base_url = QLineEdit()
        self.model = QComboBox()
        self.model.setEditable(True)
        self.model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.fetch_button = QPushButton("Fetch models")
        self.price_in, self.price_out = QDoubleSpinBox(), QDoubleSpinBox()
        for box in (self.price_in, self.price_out):
            box.setRange(0.0, 100_000.0)
            box.setDecimals(4)
            box.setSuffix(" $/M tokens")
        self.concurrency = QSpinBox()
        self.concurrency.setRange(1, 1024)
        self.concurrency.setValue(8)
        self.key = QLineEdit()
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("API key (stored in the OS keychain, never in a file)")
        self.key_note = QLabel("key stored in keychain")
        self.replace_key_button = QPushButton("Replace key")
        self.error = ErrorLabel()
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.setOpenExternalLinks(True)
        # the whole of a long error (a keychain's fix with its commands), shown on request
        # in a box of fixed height: the form's fields keep their size
        self.details_button = QPushButton("Show the details")
        self.details_button.setCheckable(True)
        self.details_button.hide()
        self.details = text_view()
        self.details.setFixedHeight(110)
        self.details.hide()
        self.details_button.toggled.connect(self._show_details)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )

        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(self.fetch_button)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key, 1)
        key_row.addWidget(self.key_note, 1)
        key_row.addWidget(self.replace_key_button)
        form = QFormLayout()
        form.addRow("Worker id", self.worker_id)
        form.addRow("Provider", self.provider)
        form.addRow("Base URL", self.base_url)
        form.addRow("Model", model_row)
        form.addRow("Price in", self.price_in)
        form.addRow("Price out", self.price_out)
        form.addRow("Concurrency", self.concurrency)
        form.addRow("API key", key_row)
        for field in (self.worker_id, self.provider, self.base_url, self.model, self.key):
            field.setMinimumHeight(field.sizeHint().height())  # a long error never squashes them
        layout = QVBoxLayout(self)
        layout.setSizeConstraint(QLayout.SizeConstraint.SetMinimumSize)  # grows instead
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.details)
        layout.addWidget(self.buttons)

        if spec is not None:
            self._fill(spec)
        else:
            self.provider.setCurrentText("openai")
            self.base_url.setText(PRESETS["openai"].base_url)
        stored = key_status is not None and key_status.source == "keychain"
        self.key.setVisible(not stored)
        self.key_note.setVisible(stored)
        self.replace_key_button.setVisible(stored)
        if key_status is not None and key_status.source == "environment":
            self.key.setPlaceholderText(f"optional: the key now comes from {key_status.env}")
        self._provider_changed(fill=False)

        self.provider.currentTextChanged.connect(lambda _: self._provider_changed(fill=True))
        self.fetch_button.clicked.connect(self.fetch_models)
        self.replace_key_button.clicked.connect(self.replace_key)
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        self.finished.connect(self._forget_key)

    def _fill(self, spec: WorkerSpec) -> None:
        preset = next(
            (
                name
                for name, p in PRESETS.items()
                if p.provider == spec.provider and p.base_url == spec.base_url
            ),
            spec.provider,
        )
        self.provider.setCurrentText(preset)
        self.base_url.setText(spec.base_url or "")
        self.model.setEditText(spec.model)
        self.price_in.setValue(spec.price_in)
        self.price_out.setValue(spec.price_out)
        self.concurrency.setValue(spec.concurrency)

    def _provider_changed(self, *, fill: bool) -> None:
        """A preset fills its base URL; a local model has no URL, key or model list."""
        name = self.provider.currentText()
        local = name == "local"
        if fill:
            self.base_url.setText("" if local else PRESETS[name].base_url)
        for widget in (
            self.base_url,
            self.fetch_button,
            self.key,
            self.concurrency,
            self.replace_key_button,
        ):
            widget.setEnabled(not local)
        line = self.model.lineEdit()
        assert line is not None  # the model box is editable
        line.setPlaceholderText(
            "a local folder or a Hugging Face id"
            if local
            else "the model name the provider expects (or Fetch models)"
        )

    def replace_key(self) -> None:
        """Swap the "stored" note for an empty masked field: the new key replaces the old
        one on Save."""
        self.key_note.hide()
        self.replace_key_button.hide()
        self.key.clear()
        self.key.show()
        self.key.setFocus()

    # -- the spec --------------------------------------------------------------------

    def _spec(self, *, draft: bool = False) -> WorkerSpec:
        """The spec the form describes (``SpecError`` names a bad field). A draft, for
        listing models, may still lack its id and model."""
        kept = {name: getattr(self.spec, name) for name in KEPT_FIELDS} if self.spec else {}
        name = self.provider.currentText()
        local = name == "local"
        worker_id = self.worker_id.text().strip() or ("new-worker" if draft else "")
        model = self.model.currentText().strip() or ("any" if draft else "")
        return spec_from_options(
            worker_id,
            name,
            model,
            base_url=None if local else (self.base_url.text().strip() or None),
            price_in=self.price_in.value(),
            price_out=self.price_out.value(),
            concurrency=None if local else self.concurrency.value(),
            **kept,
        )

    def _entered_key(self, worker_id: str) -> str | None:
        if self.key.isHidden() or not self.key.isEnabled() or not self.key.text().strip():
            return None
        return clean_key(worker_id, self.key.text())

    # -- fetching models -------------------------------------------------------------

    def fetch_models(self) -> None:
        """List the endpoint's models in the background (with the key entered, if any)."""
        try:
            spec = self._spec(draft=True)
            key = self._entered_key(spec.id)
        except ValueError as exc:
            self.show_error(str(exc))
            return
        registry = self.registry

        async def call() -> list[str]:
            return await endpoint_models(spec, key=key, registry=registry)

        self.show_error("")
        self.fetch_button.setEnabled(False)
        self.fetch_button.setText("Fetching…")
        background.start(self._owner, "list models", call, self._models_fetched, self._fetch_failed)

    def _models_fetched(self, _context, models: list[str]) -> None:
        self._fetch_done()
        typed = self.model.currentText()
        self.model.clear()
        self.model.addItems(models)
        self.model.setEditText(typed if typed else (models[0] if models else ""))
        if not models:
            self.show_error("The server lists no models: type the model name.")

    def _fetch_failed(self, _context, exc: Exception) -> None:
        self._fetch_done()
        self.show_error(f"Cannot list models: {background.readable(exc)}")

    def _fetch_done(self) -> None:
        self.fetch_button.setText("Fetch models")
        self.fetch_button.setEnabled(self.provider.currentText() != "local")

    # -- saving ----------------------------------------------------------------------

    def save(self) -> None:
        """Validate the form, then store the spec (and the key, in the keychain) in the
        background; the dialog closes when both are stored."""
        try:
            spec = self._spec()
            key = self._entered_key(spec.id)
        except ValueError as exc:
            self.show_error(str(exc))
            return
        registry, replace = self.registry, self.spec is not None
        self.show_error("")
        self.buttons.setEnabled(False)
        background.start(
            self._owner,
            f"save worker {spec.id}",
            lambda: registry.add(spec, key=key, replace=replace),
            self._stored,
            self._store_failed,
            context=spec.id,
        )

    def _stored(self, worker_id: str, _spec: WorkerSpec) -> None:
        self.buttons.setEnabled(True)
        self._forget_key()
        self.saved.emit(worker_id)
        self.accept()

    def _store_failed(self, worker_id: str, exc: Exception) -> None:
        self.buttons.setEnabled(True)
        if isinstance(exc, KeychainUnavailable):
            try:
                env = self._spec().effective_key_env
            except ValueError:
                env = None
            self.show_error(
                f"Worker '{worker_id}' was not saved: {keychain_sentence(env)}", str(exc)
            )
            return
        self.show_error(f"Worker '{worker_id}' was not saved: {background.readable(exc)}")

    def _show_details(self, shown: bool) -> None:
        self.details.setVisible(shown)
        self.adjustSize()

    def show_error(self, sentence: str, details: str = "") -> None:
        """The error under the form: one sentence, and the full text behind a button."""
        self.error.setText(sentence)
        self.details.setPlainText(details)
        self.details_button.setVisible(bool(details))
        if not details:
            self.details_button.setChecked(False)
        if self.isVisible():
            self.adjustSize()  # room for the sentence: the dialog grows, the fields keep theirs

    def _forget_key(self) -> None:
        self.key.clear()
