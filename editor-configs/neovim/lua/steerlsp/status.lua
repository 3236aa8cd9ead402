-- The model's state per steerlsp client: loading (with progress), ready, failed, disabled.
--
-- Sources: `steerlsp/status` (asked on attach, and every `status_interval_ms` while the
-- model loads), `$/progress` under a `steerlsp-load-` token (LspProgress), and the errors
-- of inline requests ("the model is still loading" starts the polling). When the model
-- becomes ready, `on_ready` is called once with the trigger kind of the refused request,
-- if one was refused, so that the current position is asked again.
local compat = require('steerlsp.compat')

local M = {}

local LOADING_TOKEN = '^steerlsp%-load%-'
local REQUEST_FAILED = -32803
local METHOD_NOT_FOUND = -32601

---@class steerlsp.ClientStatus
---@field state 'unknown'|'loading'|'ready'|'failed'|'disabled'
---@field percent integer|nil  load progress, when the server reports it
---@field message string|nil   the progress message
---@field error string|nil     why the model failed, or the last request's error
---@field model table|nil      the last `steerlsp/status` model section
---@field refused integer|nil  trigger kind of a request refused while loading
---@field timer userdata|nil
---@field asking boolean
---@field progressed integer|nil  progress notifications seen (a status asked before one is stale)
---@field waiting fun()[]|nil  callbacks for the answer to the question in flight

---@type table<integer, steerlsp.ClientStatus>
local clients = {}

M.interval_ms = 1000
---@type fun(client_id: integer, kind: integer|nil, before: string)
M.on_ready = function() end

local function changed()
  pcall(vim.cmd, 'redrawstatus')
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'SteerlspStatus', modeline = false })
end

local function stop_polling(entry)
  if entry.timer then
    entry.timer:stop()
    entry.timer:close()
    entry.timer = nil
  end
end

local function set_state(client_id, state)
  local entry = clients[client_id]
  local before = entry.state
  entry.state = state
  if state == 'loading' then
    M.poll(client_id)
  else
    stop_polling(entry)
    entry.percent, entry.message = nil, nil
  end
  if state == 'ready' and before ~= 'ready' then
    local kind = entry.refused
    entry.refused = nil
    M.on_ready(client_id, kind, before)
  end
  if state ~= before then
    changed()
  end
end

--- Start tracking a client and ask its status once.
function M.attach(client)
  if clients[client.id] then
    return
  end
  clients[client.id] = { state = 'unknown', asking = false }
  M.ask(client.id)
end

function M.detach(client_id)
  local entry = clients[client_id]
  if entry then
    stop_polling(entry)
    clients[client_id] = nil
    changed()
  end
end

---@return steerlsp.ClientStatus|nil
function M.get(client_id)
  return clients[client_id]
end

--- Take in a `steerlsp/status` reply.
local function update(client_id, err, result)
  local entry = clients[client_id]
  if err then
    if err.code == METHOD_NOT_FOUND then
      set_state(client_id, 'unknown') -- not steerlsp, or too old: no state to show
    end
    return
  end
  local model = result and result.model or {}
  entry.model = model
  local state = model.state
  if state == 'failed' then
    entry.error = model.error
  elseif state == 'ready' then
    entry.error = nil
  end
  if state == 'loading' or state == 'ready' or state == 'failed' or state == 'disabled' then
    set_state(client_id, state)
  end
end

--- Ask `steerlsp/status` now (at most one question in flight); `done`, if given, runs
--- once the answer is in.
---@param done fun()|nil
function M.ask(client_id, done)
  local entry = clients[client_id]
  local client = vim.lsp.get_client_by_id(client_id)
  if not entry or not client then
    if done then
      done()
    end
    return
  end
  if done then
    entry.waiting = entry.waiting or {}
    table.insert(entry.waiting, done)
  end
  if entry.asking then
    return
  end
  entry.asking = true
  local asked = entry.progressed
  compat.request(client, 'steerlsp/status', vim.empty_dict(), function(err, result)
    local now = clients[client_id]
    if not now then
      return
    end
    now.asking = false
    if now.progressed ~= asked then
      -- Progress arrived meanwhile and is newer than this answer: ask again.
      M.ask(client_id)
      return
    end
    update(client_id, err, result)
    local waiting = now.waiting or {}
    now.waiting = nil
    for _, callback in ipairs(waiting) do
      callback()
    end
  end)
end

--- Ask every `interval_ms` while the model loads.
function M.poll(client_id)
  local entry = clients[client_id]
  if not entry or entry.timer then
    return
  end
  entry.timer = compat.uv.new_timer()
  entry.timer:start(
    M.interval_ms,
    M.interval_ms,
    vim.schedule_wrap(function()
      M.ask(client_id)
    end)
  )
end

--- LspProgress: `params` is the `$/progress` notification's params.
function M.progress(client_id, params)
  local entry = clients[client_id]
  local value = params and params.value
  if not entry or type(params.token) ~= 'string' or not params.token:match(LOADING_TOKEN) then
    return
  end
  if type(value) ~= 'table' then
    return
  end
  entry.progressed = (entry.progressed or 0) + 1
  if value.kind == 'end' then
    if value.message == 'ready' then
      set_state(client_id, 'ready')
    end
    M.ask(client_id) -- the counts, or why it failed
    return
  end
  if entry.state ~= 'loading' then
    set_state(client_id, 'loading')
  end
  entry.percent = value.percentage or entry.percent
  entry.message = value.message or value.title or entry.message
  changed()
end

--- An inline request was answered with `err`; `kind` is its trigger kind.
function M.refused(client_id, err, kind)
  local entry = clients[client_id]
  if not entry or not err then
    return
  end
  local message = tostring(err.message or '')
  if err.code == REQUEST_FAILED and message:find('still loading', 1, true) then
    -- An explicit trigger (1) wins over an automatic one (2).
    entry.refused = math.min(entry.refused or kind or 2, kind or 2)
    if entry.state ~= 'loading' then
      set_state(client_id, 'loading')
    end
  elseif err.code == REQUEST_FAILED and message:find('disabled', 1, true) then
    set_state(client_id, 'disabled')
  else
    entry.error = message
    if entry.state ~= 'failed' then
      M.ask(client_id) -- did the model itself fail?
    end
    changed()
  end
end

--- An inline request was answered with a result: a request error is over.
function M.answered(client_id)
  local entry = clients[client_id]
  if entry and entry.error and entry.state ~= 'failed' then
    entry.error = nil
    changed()
  end
end

--- Whether `client` has an inline completion in flight.
function M.generating(client)
  for _, request in pairs(client.requests or {}) do
    if request.type == 'pending' and request.method == 'textDocument/inlineCompletion' then
      return true
    end
  end
  return false
end

return M
