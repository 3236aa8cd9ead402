-- A minimal init.lua for steerlsp: the plugin in this folder, with its defaults.
--
--   nvim -u editor-configs/neovim/steerlsp.lua some_file.py
--
-- or copy the two statements below into your own init.lua, with the path of this folder.
-- Installing with lazy.nvim, the options and the keymaps: README.md beside this file,
-- and :help steerlsp.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.runtimepath:prepend(here)

require('steerlsp').setup({
  -- cmd = { '/path/to/venv/bin/steerlsp' },
  -- settings = { completion = { maxNewTokens = 64 } },
})
