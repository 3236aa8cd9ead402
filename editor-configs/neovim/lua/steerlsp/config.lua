-- The plugin's options: defaults, and the user's table merged over them once in setup().
local M = {}

-- Insert-mode keys. Meta (Alt) chords are "not used" in Insert mode (`:h insert-index`);
-- Neovim only lets an unmapped one act as <Esc> followed by the key (`:h i_META`).
-- The letters mirror the completion menu's CTRL-Y / CTRL-N / CTRL-P / CTRL-E.
M.keymaps = {
  accept = '<M-y>', -- the whole suggestion
  accept_word = '<M-w>', -- its next word
  accept_line = '<M-l>', -- the rest of its current line
  next = '<M-n>', -- the next alternative (asks for alternatives if there is only one)
  prev = '<M-p>', -- the previous alternative
  dismiss = '<M-e>', -- hide it until the next keystroke
  trigger = '<M-Bslash>', -- ask now (triggerKind Invoked: several alternatives)
}

M.defaults = {
  cmd = { 'steerlsp' },
  filetypes = { 'python' },
  root_markers = {
    'pyproject.toml',
    'setup.py',
    'setup.cfg',
    'requirements.txt',
    'Pipfile',
    '.git',
  },
  -- steerlsp's own settings (its docs/configuration.md), sent as
  -- initializationOptions and on change with workspace/didChangeConfiguration.
  settings = {},
  -- Merged into the vim.lsp.start() config: capabilities, on_attach, settings.pylsp, ...
  lsp = {},
  -- Neovim 0.12's vim.lsp.inline_completion when it is there; false: the extmark path.
  native = true,
  -- The extmark path's wait after a keystroke before it asks (0.12's native path waits 200 ms).
  debounce_ms = 100,
  -- How often steerlsp/status is asked while the model loads.
  status_interval_ms = 1000,
  -- false: no keymaps; a key set to false: that one is not mapped.
  keymaps = M.keymaps,
  enabled = true,
}

--- The options: `user` over the defaults; keymaps merged key by key.
---@param user table|nil
---@return table
function M.merge(user)
  user = user or {}
  local opts = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), user)
  -- Lists replace, never merge by index.
  for _, key in ipairs({ 'cmd', 'filetypes', 'root_markers' }) do
    if user[key] ~= nil then
      opts[key] = user[key]
    end
  end
  if user.keymaps == false then
    opts.keymaps = {}
  end
  if type(opts.cmd) == 'string' then
    opts.cmd = { opts.cmd }
  end
  return opts
end

return M
