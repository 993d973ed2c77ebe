"""The engine of the workbench. Never imports Qt, pyqtgraph or ``workbench.gui``."""
