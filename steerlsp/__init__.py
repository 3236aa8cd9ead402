"""steerlsp: an AI language server for Python that proxies pylsp."""

__version__ = "0.1.0"
