"""The pygls server: transport, proxying to the upstream language server, LSP handlers."""
