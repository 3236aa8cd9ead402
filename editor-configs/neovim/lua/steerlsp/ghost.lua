-- The extmark path: inline completion requests and ghost text drawn by the plugin itself.
-- Neovim 0.10 and 0.11 have no vim.lsp.inline_completion; on 0.12 it serves with
-- `native = false`. Only the current buffer asks, after `debounce_ms` without a
-- keystroke; a new request cancels the one in flight ($/cancelRequest).
--
-- One suggestion is shown at a time: its items (alternatives), each as the text still
-- to insert at an anchor (the cursor when it was shown). Typing what it says moves the
-- anchor along instead of asking again; accepting a part does the same.
local accept = require('steerlsp.accept')
local compat = require('steerlsp.compat')
local status = require('steerlsp.status')

local M = { name = 'extmark' }

local api = vim.api
local METHOD = 'textDocument/inlineCompletion'
local INVOKED, AUTOMATIC = 1, 2

M.ns = api.nvim_create_namespace('steerlsp.ghost')
M.debounce_ms = 100
--- Whether a buffer may ask now (the plugin is enabled); set by init.
---@type fun(bufnr: integer): boolean
M.allowed = function()
  return true
end

---@type table<integer, integer> bufnr -> client id
local clients = {}

---@class steerlsp.Shown
---@field bufnr integer
---@field client_id integer
---@field row integer 0-based
---@field col integer byte column of the anchor
---@field items {text: string, command: table|nil}[]
---@field index integer
---@field hint boolean show "(i/n)"

---@type steerlsp.Shown|nil
local shown
---@class steerlsp.Pending
---@field bufnr integer
---@field client_id integer
---@field id integer|nil the request's id, to cancel it
---@field kind integer
---@field row integer
---@field col integer
---@field tick integer the buffer's changedtick when asked
---@field step integer|nil

---@type steerlsp.Pending|nil
local pending
local timer

local function stop_timer()
  if timer then
    timer:stop()
    timer:close()
    timer = nil
  end
end

local function cancel_pending()
  local request = pending
  pending = nil
  if request and request.id then
    local client = vim.lsp.get_client_by_id(request.client_id)
    if client then
      compat.cancel(client, request.id)
    end
  end
end

local function clear()
  if shown and api.nvim_buf_is_valid(shown.bufnr) then
    api.nvim_buf_clear_namespace(shown.bufnr, M.ns, 0, -1)
  end
  shown = nil
end

local function display(text)
  -- Tabs in virtual text would show as ^I.
  return (text:gsub('\t', string.rep(' ', vim.bo.tabstop)))
end

local function draw()
  local s = shown
  if not s then
    return
  end
  api.nvim_buf_clear_namespace(s.bufnr, M.ns, 0, -1)
  local lines = vim.split(s.items[s.index].text, '\n', { plain = true })
  local first = {}
  if lines[1] ~= '' then
    first[1] = { display(lines[1]), 'SteerlspGhost' }
  end
  if s.hint and #s.items > 1 then
    first[#first + 1] = { (' (%d/%d)'):format(s.index, #s.items), 'SteerlspGhostHint' }
  end
  local below = {}
  for i = 2, #lines do
    below[#below + 1] = { { display(lines[i]), 'SteerlspGhost' } }
  end
  api.nvim_buf_set_extmark(s.bufnr, M.ns, s.row, s.col, {
    virt_text = #first > 0 and first or nil,
    virt_text_pos = #first > 0 and 'inline' or nil,
    virt_lines = #below > 0 and below or nil,
    hl_mode = 'combine',
  })
end

local function current_window_of(bufnr)
  local win = api.nvim_get_current_win()
  return api.nvim_win_get_buf(win) == bufnr and win or nil
end

local function inserting()
  return api.nvim_get_mode().mode:sub(1, 1) == 'i'
end

--- The items of a reply as texts to insert at (row, col); items whose range starts
--- earlier keep only what follows the text already typed there.
local function items_from(result, client, bufnr, row, col)
  local items = {}
  local seen = {}
  for _, item in ipairs(result and (result.items or result) or {}) do
    local text = accept.insert_text(item)
    local range = item.range
    if range then
      local start_row = range.start.line
      local line = api.nvim_buf_get_lines(bufnr, start_row, start_row + 1, false)[1] or ''
      local start_col = compat.byte_col(line, range.start.character, client.offset_encoding)
      if start_row < row or (start_row == row and start_col < col) then
        local before = api.nvim_buf_get_text(bufnr, start_row, start_col, row, col, {})
        local typed = table.concat(before, '\n')
        text = text:sub(1, #typed) == typed and text:sub(#typed + 1) or ''
      end
    end
    if text ~= '' and not seen[text] then
      seen[text] = true
      items[#items + 1] = { text = text, command = item.command }
    end
  end
  return items
end

local function on_reply(request, err, result)
  if pending ~= request then
    return -- superseded, or dismissed
  end
  pending = nil
  if err then
    status.refused(request.client_id, err, request.kind)
    return
  end
  status.answered(request.client_id)
  local bufnr = request.bufnr
  local win = current_window_of(bufnr)
  if not win or not inserting() or api.nvim_buf_get_changedtick(bufnr) ~= request.tick then
    return
  end
  local cursor = api.nvim_win_get_cursor(win)
  if cursor[1] - 1 ~= request.row or cursor[2] ~= request.col then
    return
  end
  local client = vim.lsp.get_client_by_id(request.client_id)
  local items = client and items_from(result, client, bufnr, request.row, request.col) or {}
  clear()
  if #items == 0 then
    return
  end
  local index = 1
  if request.step and #items > 1 then
    index = (request.step % #items) + 1
  end
  shown = {
    bufnr = bufnr,
    client_id = request.client_id,
    row = request.row,
    col = request.col,
    items = items,
    index = index,
    hint = request.kind == INVOKED,
  }
  draw()
end

--- Ask for inline completions at the cursor of the current buffer, `bufnr`.
---@param kind integer 1 (Invoked) or 2 (Automatic)
---@param step integer|nil after an Invoked request for "next"/"prev": the item to show
function M.trigger(bufnr, kind, step)
  stop_timer()
  cancel_pending()
  local win = current_window_of(bufnr)
  local client = clients[bufnr] and vim.lsp.get_client_by_id(clients[bufnr])
  if not win or not client or not M.allowed(bufnr) then
    return
  end
  local cursor = api.nvim_win_get_cursor(win)
  local params = vim.lsp.util.make_position_params(win, client.offset_encoding)
  params.context = { triggerKind = kind }
  local request = {
    bufnr = bufnr,
    client_id = client.id,
    kind = kind,
    row = cursor[1] - 1,
    col = cursor[2],
    tick = api.nvim_buf_get_changedtick(bufnr),
    step = step,
  }
  pending = request
  local ok, id = compat.request(client, METHOD, params, function(err, result)
    on_reply(request, err, result)
  end, bufnr)
  if ok then
    request.id = id
  elseif pending == request then
    pending = nil
  end
end

local function schedule(bufnr)
  stop_timer()
  cancel_pending()
  timer = compat.uv.new_timer()
  timer:start(
    M.debounce_ms,
    0,
    vim.schedule_wrap(function()
      stop_timer()
      if api.nvim_get_current_buf() == bufnr and inserting() then
        M.trigger(bufnr, AUTOMATIC)
      end
    end)
  )
end

--- A keystroke in insert mode: keep what was typed along the suggestion, or ask again.
local function changed(bufnr)
  if not M.allowed(bufnr) then
    return
  end
  local s = shown
  if s and s.bufnr == bufnr then
    local win = current_window_of(bufnr)
    local typed = win and accept.typed_since(win, s.row, s.col)
    local text = s.items[s.index].text
    if typed and #typed < #text and text:sub(1, #typed) == typed then
      if typed ~= '' then
        local kept = {}
        for _, item in ipairs(s.items) do
          if item.text:sub(1, #typed) == typed and #item.text > #typed then
            kept[#kept + 1] = { text = item.text:sub(#typed + 1), command = item.command }
            if item == s.items[s.index] then
              s.index = #kept
            end
          end
        end
        local cursor = api.nvim_win_get_cursor(win)
        s.items, s.row, s.col = kept, cursor[1] - 1, cursor[2]
        draw()
      end
      return
    end
    clear()
  end
  schedule(bufnr)
end

function M.attach(bufnr, client)
  clients[bufnr] = client.id
  local group = api.nvim_create_augroup('steerlsp.ghost.' .. bufnr, { clear = true })
  api.nvim_create_autocmd({ 'InsertEnter', 'CursorMovedI', 'TextChangedI' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      changed(bufnr)
    end,
  })
  api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = group,
    buffer = bufnr,
    callback = function()
      M.dismiss(bufnr)
    end,
  })
end

function M.detach(bufnr)
  clients[bufnr] = nil
  pcall(api.nvim_del_augroup_by_name, 'steerlsp.ghost.' .. bufnr)
  M.deactivate(bufnr)
end

-- Only the current buffer's autocmds fire, so there is nothing to switch.
function M.activate() end

function M.deactivate(bufnr)
  if (shown and shown.bufnr == bufnr) or (pending and pending.bufnr == bufnr) then
    M.dismiss(bufnr)
  end
end

--- The suggestion shown in `bufnr`: the text still to insert, its index and the count.
---@return {text: string, index: integer, count: integer}|nil
function M.suggestion(bufnr)
  local s = shown
  if not s or s.bufnr ~= bufnr then
    return nil
  end
  return { text = s.items[s.index].text, index = s.index, count = #s.items }
end

---@param how 'all'|'word'|'line'
---@return boolean whether anything was inserted
function M.accept(bufnr, how)
  local s = shown
  local win = current_window_of(bufnr)
  if not s or s.bufnr ~= bufnr or not win then
    return false
  end
  local item = s.items[s.index]
  local part = accept.part(item.text, how)
  if part == '' then
    return false
  end
  local row, col = accept.insert(win, s.row, s.col, part)
  item.text = item.text:sub(#part + 1)
  s.items, s.index, s.row, s.col, s.hint = { item }, 1, row, col, false
  if item.text == '' then
    clear()
    accept.run_command(vim.lsp.get_client_by_id(s.client_id), item.command)
  else
    draw()
  end
  return true
end

--- Show the next (1) or previous (-1) alternative; with one, ask for alternatives.
function M.cycle(bufnr, step)
  local s = shown
  if s and s.bufnr == bufnr and #s.items > 1 then
    s.index = ((s.index - 1 + step) % #s.items) + 1
    s.hint = true
    draw()
    return true
  end
  M.trigger(bufnr, INVOKED, step)
  return true
end

---@return boolean whether a suggestion or a request was dropped
function M.dismiss(bufnr)
  local had = (shown ~= nil and shown.bufnr == bufnr) or pending ~= nil or timer ~= nil
  stop_timer()
  cancel_pending()
  if shown and shown.bufnr == bufnr then
    clear()
  end
  return had
end

return M
