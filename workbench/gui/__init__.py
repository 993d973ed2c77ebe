"""The desktop GUI over ``workbench.core`` (PySide6 + pyqtgraph)."""
