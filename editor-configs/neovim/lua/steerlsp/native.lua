-- The native path: Neovim 0.12's vim.lsp.inline_completion, asking only for the current
-- buffer.
--
-- Neovim creates one completor per enabled buffer, and each asks on every insert-mode
-- keystroke anywhere, with the current window's cursor; so the plugin enables it for the
-- current buffer alone (on BufEnter, off on BufLeave).
--
-- Two things need Neovim's private completor (`vim.lsp._capability`), and only this file
-- touches it: asking with triggerKind Invoked or again when the model is ready (there is
-- no public request function), and the number of items (to cycle or to ask for more).
-- `available()` checks its shape; when it differs, the plugin uses the extmark path.
--
-- The steerlsp client's inline requests pass through a wrapper that keeps expected
-- errors (the model is loading) out of Neovim's handler, which logs every error to
-- lsp.log, and reports them to the status.
local accept = require('steerlsp.accept')
local status = require('steerlsp.status')

local M = { name = 'native' }

local api = vim.api
local METHOD = 'textDocument/inlineCompletion'
local INVOKED = 1

-- The namespace vim.lsp.inline_completion draws in (the same name gives the same id).
M.ns = api.nvim_create_namespace('nvim.lsp.inline_completion')

local Completor
local wrapped = {}
---@type {bufnr: integer, step: integer}|nil
local after -- select this step once the Invoked reply is in

--- Whether the native path can be used here; if not, why.
---@return boolean, string|nil
function M.available()
  local ic = vim.lsp.inline_completion
  if not (ic and ic.enable and ic.get and ic.select and ic.is_enabled) then
    return false, 'vim.lsp.inline_completion is missing (Neovim 0.12 has it)'
  end
  local ok, capability = pcall(require, 'vim.lsp._capability')
  local class = ok and type(capability) == 'table' and type(capability.all) == 'table'
    and capability.all.inline_completion
  if
    not (
      type(class) == 'table'
      and type(class.active) == 'table'
      and type(class.request) == 'function'
      and type(class.count_items) == 'function'
      and type(class.abort) == 'function'
    )
  then
    return false, "this Neovim's inline completion internals differ from what steerlsp knows"
  end
  Completor = class
  return true
end

local function completor(bufnr)
  return Completor and Completor.active[bufnr]
end

local function bufnr_of(params)
  local uri = params and params.textDocument and params.textDocument.uri
  return uri and vim.uri_to_bufnr(uri)
end

--- Route the steerlsp client's inline replies through the status first.
local function wrap(client)
  if wrapped[client.id] then
    return
  end
  wrapped[client.id] = true
  local request = client.request
  client.request = function(self, method, params, handler, bufnr)
    if method == METHOD and type(handler) == 'function' then
      local inner = handler
      handler = function(err, result, ctx)
        local kind = params and params.context and params.context.triggerKind
        if err then
          status.refused(self.id, err, kind)
          return inner(nil, nil, ctx)
        end
        status.answered(self.id)
        inner(err, result, ctx)
        local target = bufnr_of(params)
        if after and after.bufnr == target then
          local step = after.step
          after = nil
          local c = completor(target)
          if c and c.current and c:count_items() > 1 then
            vim.lsp.inline_completion.select({ bufnr = target, count = step })
          end
        end
      end
    end
    return request(self, method, params, handler, bufnr)
  end
end

function M.attach(_, client)
  wrap(client)
end

function M.detach(bufnr)
  M.deactivate(bufnr)
end

function M.activate(bufnr)
  if not vim.lsp.inline_completion.is_enabled({ bufnr = bufnr }) then
    vim.lsp.inline_completion.enable(true, { bufnr = bufnr })
  end
end

function M.deactivate(bufnr)
  if api.nvim_buf_is_valid(bufnr) and vim.lsp.inline_completion.is_enabled({ bufnr = bufnr }) then
    vim.lsp.inline_completion.enable(false, { bufnr = bufnr })
  end
end

--- Ask now at the cursor of the current buffer `bufnr`.
---@param kind integer 1 (Invoked) or 2 (Automatic)
---@param step integer|nil after an Invoked request for "next"/"prev": the item to show
function M.trigger(bufnr, kind, step)
  local c = completor(bufnr)
  if not c then
    return
  end
  after = step and { bufnr = bufnr, step = step } or nil
  c:request(kind)
end

local function text_of(current)
  local text = current.insert_text
  return type(text) == 'string' and text or accept.insert_text({ insertText = text })
end

---@return {text: string, index: integer, count: integer}|nil
function M.suggestion(bufnr)
  local c = completor(bufnr)
  local current = c and c.current
  if not current then
    return nil
  end
  local text = text_of(current)
  local range = current.range
  local win = api.nvim_get_current_win()
  if range and api.nvim_win_get_buf(win) == bufnr then
    -- The range starts where the item's text starts; what is typed since is not shown.
    local typed = accept.typed_since(win, range.start.row, range.start.col)
    if typed and text:sub(1, #typed) == typed then
      text = text:sub(#typed + 1)
    end
  end
  return { text = text, index = current._index or 1, count = c:count_items() }
end

---@param how 'all'|'word'|'line'
---@return boolean
function M.accept(bufnr, how)
  local suggestion = M.suggestion(bufnr)
  if not suggestion or api.nvim_get_current_buf() ~= bufnr then
    return false
  end
  local part = accept.part(suggestion.text, how)
  if part == '' then
    return false
  end
  -- Inserted at the cursor (what was typed since the request is already there). After a
  -- part, Neovim asks again and steerlsp answers with the rest from its typed-ahead cache.
  local whole = part == suggestion.text
  return vim.lsp.inline_completion.get({
    bufnr = bufnr,
    on_accept = function(item)
      local win = api.nvim_get_current_win()
      if api.nvim_win_get_buf(win) ~= bufnr then
        return
      end
      local cursor = api.nvim_win_get_cursor(win)
      accept.insert(win, cursor[1] - 1, cursor[2], part)
      if whole then
        accept.run_command(vim.lsp.get_client_by_id(item.client_id), item.command)
      end
    end,
  })
end

function M.cycle(bufnr, step)
  local c = completor(bufnr)
  if not c then
    return false
  end
  if c.current and c:count_items() > 1 then
    vim.lsp.inline_completion.select({ bufnr = bufnr, count = step })
  else
    M.trigger(bufnr, INVOKED, step)
  end
  return true
end

function M.dismiss(bufnr)
  local c = completor(bufnr)
  if not c then
    return false
  end
  local had = c.current ~= nil
  c:abort()
  return had
end

return M
