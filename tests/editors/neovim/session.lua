-- A headless Neovim session against steerlsp; writes what the editor saw as JSON.
-- Driven by tests/editors/test_neovim.py: STEERLSP_CMD (JSON list), STEERLSP_ROOT, STEERLSP_OUT.
local out = {}
local function finish()
  local f = assert(io.open(os.getenv('STEERLSP_OUT'), 'w'))
  f:write(vim.json.encode(out))
  f:close()
  vim.cmd('qa!')
end
local ok, err = pcall(function()
  local root = os.getenv('STEERLSP_ROOT')
  vim.lsp.config('steerlsp', {
    cmd = vim.json.decode(os.getenv('STEERLSP_CMD')),
    filetypes = { 'python' },
    root_dir = root,
  })
  vim.lsp.enable('steerlsp')

  vim.cmd('edit ' .. root .. '/shop/report.py')
  local report = vim.api.nvim_get_current_buf()
  local client
  assert(vim.wait(30000, function()
    client = vim.lsp.get_clients({ bufnr = report, name = 'steerlsp' })[1]
    return client ~= nil and client.initialized
  end, 50), 'steerlsp did not attach')
  out.server = client.server_info
  out.encoding = client.offset_encoding
  out.inline_provider = client.server_capabilities.inlineCompletionProvider ~= nil

  -- Diagnostics, as the editor places them (0-based line, byte column).
  assert(vim.wait(30000, function() return #vim.diagnostic.get(report) > 0 end, 50), 'no diagnostics')
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(report)) do
    table.insert(out.diagnostics, { lnum = d.lnum, col = d.col, message = d.message })
  end

  -- Hover on `format`, after the emoji on the same line.
  vim.fn.cursor(9, 1)
  vim.fn.search('format', 'c')
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local hover = client:request_sync('textDocument/hover', params, 30000, report)
  out.hover = hover and hover.result and hover.result.contents.value or vim.NIL

  -- Wait for the model, then ask for an inline completion in a scratch buffer.
  assert(vim.wait(600000, function()
    local status = client:request_sync('steerlsp/status', {}, 5000, report)
    return status and status.result and status.result.model.state == 'ready'
  end, 500), 'model not ready')
  vim.cmd('edit ' .. root .. '/shop/scratch.py')
  local scratch = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(scratch, 0, -1, false, {
    'import os', '', '', 'def list_python_files(folder):',
    '    for name in os.listdir(folder):', '        ',
  })
  assert(vim.wait(10000, function()
    return vim.lsp.buf_is_attached(scratch, client.id)
  end, 50), 'not attached to the scratch buffer')
  vim.api.nvim_win_set_cursor(0, { 6, 8 })
  local inline_params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  inline_params.context = { triggerKind = 1 }
  local inline = client:request_sync('textDocument/inlineCompletion', inline_params, 120000, scratch)
  out.inline = inline and (inline.result or inline.err) or vim.NIL
end)
if not ok then out.error = tostring(err) end
finish()
