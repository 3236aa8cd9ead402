-- What tests/editors/test_neovim_plugin.py reads inside Neovim: the ghost text as drawn, the
-- inline requests the steerlsp client sends, floating windows and messages.
-- Loaded with dofile() into _G.probe; it reads state and never changes the plugin's.
local M = {}

local NAMESPACES = { 'nvim.lsp.inline_completion', 'steerlsp.ghost' }
local GHOST_GROUPS = { ComplHint = true, SteerlspGhost = true }

---@type {uri: string, kind: integer, line: integer, character: integer, bufnr: integer}[]
M.requests = {}

--- Record every inline request of `client` (passing it on unchanged).
function M.record(client)
  local inner = client.request
  client.request = function(self, method, params, handler, bufnr)
    if method == 'textDocument/inlineCompletion' then
      local record
      local on_reply = handler
      handler = function(err, result, ctx)
        -- Under the plugin's own wrapper on the native path, an error arrives as nil.
        local items = result and #(result.items or result)
        record.reply = err and ('error ' .. tostring(err.code)) or items or 'nil'
        record.replied = vim.uv.hrtime() / 1e6
        return on_reply(err, result, ctx)
      end
      record = {
        uri = params.textDocument.uri,
        kind = params.context and params.context.triggerKind,
        line = params.position.line,
        character = params.position.character,
        at = vim.uv.hrtime() / 1e6,
        state = require('steerlsp').status().state, -- as the plugin saw it when asking
      }
      table.insert(M.requests, record)
    end
    return inner(self, method, params, handler, bufnr)
  end
end

---@type {state: string, at: number}[]
M.states = {}

--- Sample require('steerlsp').status().state every 20 ms; keep each change, timed.
function M.watch()
  local timer = vim.uv.new_timer()
  timer:start(0, 20, vim.schedule_wrap(function()
    local state = require('steerlsp').status().state
    if #M.states == 0 or M.states[#M.states].state ~= state then
      table.insert(M.states, { state = state, at = vim.uv.hrtime() / 1e6 })
    end
  end))
end

--- The ghost text drawn in `bufnr` (either path): its position and text; nil if none.
function M.ghost(bufnr)
  bufnr = bufnr == 0 and vim.api.nvim_get_current_buf() or bufnr
  for _, name in ipairs(NAMESPACES) do
    local ns = vim.api.nvim_get_namespaces()[name]
    if ns then
      for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(bufnr, ns, 0, -1, { details = true })) do
        local details = mark[4]
        local lines = {}
        local first = {}
        for _, chunk in ipairs(details.virt_text or {}) do
          if GHOST_GROUPS[chunk[2]] then
            first[#first + 1] = chunk[1]
          end
        end
        lines[1] = table.concat(first)
        for _, line in ipairs(details.virt_lines or {}) do
          local parts = {}
          for _, chunk in ipairs(line) do
            if GHOST_GROUPS[chunk[2]] then -- not the "(1/3)" hint
              parts[#parts + 1] = chunk[1]
            end
          end
          lines[#lines + 1] = table.concat(parts)
        end
        return { row = mark[2], col = mark[3], text = table.concat(lines, '\n'), namespace = name }
      end
    end
  end
  return nil
end

--- The cursor as (0-based row, byte col).
function M.cursor()
  local c = vim.api.nvim_win_get_cursor(0)
  return { row = c[1] - 1, col = c[2] }
end

--- The text of every floating window.
function M.floats()
  local found = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then
      local buf = vim.api.nvim_win_get_buf(win)
      found[#found + 1] = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
    end
  end
  return found
end

function M.close_floats()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then
      vim.api.nvim_win_close(win, true)
    end
  end
end

function M.messages()
  return vim.api.nvim_exec2('messages', { output = true }).output
end

function M.text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr or 0, 0, -1, false), '\n')
end

return M
