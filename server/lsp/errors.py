"""The JSON-RPC errors steerlsp's own handlers raise; pygls turns each into an error reply.

The codes are defined once, in :mod:`steerlsp.server.lsp.jsonrpc`, which the proxy
uses for the replies it builds itself.
"""

from __future__ import annotations

import logging

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled

from steerlsp.server.lsp.jsonrpc import REQUEST_FAILED

__all__ = ["JsonRpcException", "JsonRpcInvalidParams", "JsonRpcRequestCancelled", "RequestFailed"]


class RequestFailed(JsonRpcException):
    """LSP ``RequestFailed`` (-32803): the request was valid but cannot be served now.

    ``log_level``: how the server logs the reply (``pygls_adapter.answered_level``):
    INFO for what is expected (the model still loading), WARNING for a failure.
    """

    def __init__(self, message: str, log_level: int = logging.WARNING) -> None:
        super().__init__(code=REQUEST_FAILED, message=message)
        self.log_level = log_level
