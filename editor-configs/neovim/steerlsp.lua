-- steerlsp as the Python language server for Neovim 0.11+ (built-in vim.lsp.config).
--
-- Install steerlsp so `steerlsp` is on $PATH (e.g. `pipx install /path/to/steerlsp`
-- from a checkout), or set `cmd` to the absolute path of a virtualenv's bin/steerlsp.
-- Then put this file in ~/.config/nvim/plugin/ (or `require` it from init.lua).
-- Disable other Python servers (pylsp, pyright, ...) for the same buffers:
-- steerlsp already runs pylsp behind itself.

vim.lsp.config('steerlsp', {
  cmd = { 'steerlsp' },
  -- cmd = { 'steerlsp', '--log-file', vim.fn.stdpath('log') .. '/steerlsp.log', '--log-level', 'info' },
  filetypes = { 'python' },
  root_markers = { 'pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt', '.git' },
})

vim.lsp.enable('steerlsp')

-- Inline (ghost-text) completions from steerlsp's model. Needs Neovim 0.12+
-- (vim.lsp.inline_completion); on 0.11 this block does nothing.
-- <C-F> accepts the suggestion, <C-G> asks for the next one.
if vim.lsp.inline_completion then
  vim.api.nvim_create_autocmd('LspAttach', {
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == 'steerlsp'
          and client:supports_method('textDocument/inlineCompletion', args.buf) then
        vim.lsp.inline_completion.enable(true, { bufnr = args.buf })
        vim.keymap.set('i', '<C-F>', vim.lsp.inline_completion.get,
          { buffer = args.buf, desc = 'Accept inline completion' })
        vim.keymap.set('i', '<C-G>', vim.lsp.inline_completion.select,
          { buffer = args.buf, desc = 'Next inline completion' })
      end
    end,
  })
end

-- steerlsp's own settings (all optional; see the README's configuration reference):
-- vim.lsp.config('steerlsp', { init_options = { steerlsp = {
--   model = { name = 'default', device = 'auto' },
--   completion = { maxNewTokens = 48, debounceMs = 75 },
-- } } })
