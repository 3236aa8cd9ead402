-- steerlsp for Neovim: starts the steerlsp language server for Python buffers and shows
-- its inline completions as ghost text, with keymaps, a status and the ChatLSP commands.
--
--   require('steerlsp').setup({ settings = { completion = { maxNewTokens = 64 } } })
--
-- See :help steerlsp. Nothing here may fail on an old Neovim: the version is checked
-- before any newer API is touched.
local M = {}

local MIN_VERSION = 'nvim-0.10'
local INVOKED, AUTOMATIC = 1, 2

local opts -- the merged options, once setup() has run
local backend -- require('steerlsp.native') or require('steerlsp.ghost')
local enabled = true

--- Whether this Neovim can run the plugin; on an older one, say so once.
local function supported()
  if vim.fn.has(MIN_VERSION) == 1 then
    return true
  end
  if not M._told_version then
    M._told_version = true
    local v = vim.version and vim.version() or { major = 0, minor = 0, patch = 0 }
    local this = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
    vim.notify(
      ('steerlsp needs Neovim 0.10 or newer for ghost text; this is %s. '):format(this)
        .. 'The steerlsp server itself works with any LSP client setup '
        .. '(see editor-configs/neovim/README.md).',
      vim.log.levels.WARN
    )
  end
  return false
end

--- The steerlsp client attached to `bufnr`, if any.
local function client_of(bufnr)
  return vim.lsp.get_clients({ bufnr = bufnr, name = 'steerlsp' })[1]
end

--- `value` with every empty table as a JSON object: settings are objects, and an empty
--- Lua table would be sent as [].
local function as_object(value)
  if type(value) ~= 'table' then
    return value
  end
  if next(value) == nil then
    return vim.empty_dict()
  end
  local copy = {}
  for k, v in pairs(value) do
    copy[k] = as_object(v)
  end
  return copy
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  -- Declared on every version: steerlsp adds its completion-menu item only for clients
  -- without inline completion, and this plugin shows inline completions on 0.10 too.
  caps.textDocument = caps.textDocument or {}
  caps.textDocument.inlineCompletion = caps.textDocument.inlineCompletion
    or { dynamicRegistration = false }
  return caps
end

--- The project root: the nearest root marker; without one, the working directory when
--- the file lies under it (imports like ``shop.pricing`` resolve from there), else the
--- file's directory.
local function root_of(bufnr)
  local found = vim.fs.root(bufnr, opts.root_markers)
  if found then
    return found
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local cwd = vim.fn.getcwd()
  if name == '' or vim.startswith(name, cwd .. '/') then
    return cwd
  end
  return vim.fs.dirname(name)
end

local function start(bufnr)
  if not opts or vim.bo[bufnr].buftype ~= '' then
    return
  end
  local program = opts.cmd[1]
  if vim.fn.executable(program) ~= 1 then
    if not M._told_missing then
      M._told_missing = true
      vim.notify(
        ('steerlsp: `%s` is not an executable on $PATH. '):format(program)
          .. 'Install steerlsp (e.g. `pipx install steerlsp`) '
          .. "or set `cmd` in require('steerlsp').setup(); see :checkhealth steerlsp",
        vim.log.levels.WARN
      )
    end
    return
  end
  local config = vim.tbl_deep_extend('force', {
    name = 'steerlsp',
    cmd = opts.cmd,
    root_dir = root_of(bufnr),
    capabilities = capabilities(),
    init_options = { steerlsp = as_object(opts.settings) },
    settings = { steerlsp = as_object(opts.settings) },
  }, opts.lsp)
  vim.lsp.start(config, { bufnr = bufnr })
end

local function activate(bufnr)
  if enabled and backend and client_of(bufnr) then
    backend.activate(bufnr)
  end
end

local function deactivate(bufnr)
  if backend and client_of(bufnr) then
    backend.deactivate(bufnr)
  end
end

local function current()
  local bufnr = vim.api.nvim_get_current_buf()
  return bufnr, client_of(bufnr)
end

-- ---- actions (the keymaps' targets; each returns whether it did something) ----------

--- Accept the whole suggestion. False when none is shown, e.g. for a <Tab> fallback.
function M.accept()
  local bufnr, client = current()
  return client ~= nil and backend ~= nil and backend.accept(bufnr, 'all')
end

--- Accept the suggestion's next word.
function M.accept_word()
  local bufnr, client = current()
  return client ~= nil and backend ~= nil and backend.accept(bufnr, 'word')
end

--- Accept the rest of the suggestion's current line.
function M.accept_line()
  local bufnr, client = current()
  return client ~= nil and backend ~= nil and backend.accept(bufnr, 'line')
end

--- Show the next alternative (asks for alternatives when there is only one).
function M.next()
  local bufnr, client = current()
  return enabled and client ~= nil and backend ~= nil and backend.cycle(bufnr, 1)
end

--- Show the previous alternative.
function M.prev()
  local bufnr, client = current()
  return enabled and client ~= nil and backend ~= nil and backend.cycle(bufnr, -1)
end

--- Hide the suggestion (and drop a request in flight).
function M.dismiss()
  local bufnr, client = current()
  return client ~= nil and backend ~= nil and backend.dismiss(bufnr)
end

--- Ask now, with triggerKind Invoked: the server may answer with several alternatives.
function M.trigger()
  local bufnr, client = current()
  if not (enabled and client and backend) then
    return false
  end
  backend.trigger(bufnr, INVOKED)
  return true
end

--- The suggestion shown in the current buffer: the text still to insert, its index among
--- the alternatives and their count; nil when none is shown.
function M.suggestion()
  local bufnr, client = current()
  return client and backend and backend.suggestion(bufnr) or nil
end

-- ---- on/off -------------------------------------------------------------------------

function M.is_enabled()
  return enabled
end

function M.enable()
  enabled = true
  activate(vim.api.nvim_get_current_buf())
  pcall(vim.cmd, 'redrawstatus')
end

function M.disable()
  enabled = false
  local bufnr = vim.api.nvim_get_current_buf()
  if backend and client_of(bufnr) then
    backend.dismiss(bufnr)
    backend.deactivate(bufnr)
  end
  pcall(vim.cmd, 'redrawstatus')
end

function M.toggle()
  if enabled then
    M.disable()
  else
    M.enable()
  end
end

-- ---- status ---------------------------------------------------------------------------

--- The state of the current buffer's steerlsp client, as a table:
--- `state`: 'off' (not attached), 'disabled', 'starting', 'loading', 'ready', 'generating'
--- or 'error'; `percent` and `message` while loading; `error`; `served` and `accepted`
--- (the server's counts); `backend`: 'native' or 'extmark'.
function M.status()
  local bufnr, client = current()
  if not client then
    return { state = 'off' }
  end
  local entry = require('steerlsp.status').get(client.id) or { state = 'unknown' }
  local model = entry.model or {}
  local result = {
    state = entry.state,
    percent = entry.percent,
    message = entry.message,
    error = entry.error,
    model = model.model,
    served = model.served,
    accepted = model.accepted,
    backend = backend and backend.name,
    enabled = enabled,
    bufnr = bufnr,
  }
  if not enabled or entry.state == 'disabled' then
    result.state = 'disabled'
  elseif entry.state == 'failed' then
    result.state = 'error'
  elseif entry.state == 'loading' then
    result.state = 'loading'
  elseif require('steerlsp.status').generating(client) then
    result.state = 'generating'
  elseif entry.error then
    result.state = 'error'
  elseif entry.state == 'unknown' then
    result.state = 'starting'
  end
  return result
end

--- For 'statusline': "steer: ready", "steer: loading 40%", ...; "" in other buffers.
function M.statusline()
  local s = M.status()
  if s.state == 'off' then
    return ''
  end
  if s.state == 'loading' and s.percent then
    return ('steer: loading %d%%'):format(s.percent)
  end
  return 'steer: ' .. s.state
end

--- :Steer status: asks the server for fresh counts first.
function M.show_status()
  local _, client = current()
  if not client then
    vim.notify('steerlsp: not attached to this buffer', vim.log.levels.INFO)
    return
  end
  require('steerlsp.status').ask(client.id, function()
    local s = M.status()
    local parts = { 'steerlsp: ' .. M.statusline():sub(#'steer: ' + 1) }
    if s.message and s.state == 'loading' then
      parts[#parts + 1] = s.message
    end
    if s.model then
      parts[#parts + 1] = ('model %s'):format(s.model)
    end
    if s.served then
      parts[#parts + 1] = ('%d served, %d accepted'):format(s.served, s.accepted or 0)
    end
    parts[#parts + 1] = s.backend == 'native' and 'native inline completion' or 'extmark ghost text'
    if s.error then
      parts[#parts + 1] = 'error: ' .. s.error
    end
    vim.notify(table.concat(parts, ' · '), vim.log.levels.INFO)
  end)
end

--- Run a ChatLSP command (a key of require('steerlsp.chat').commands) at the cursor.
function M.chat(name)
  if not supported() then
    return
  end
  local _, client = current()
  if not client then
    vim.notify('steerlsp: not attached to this buffer', vim.log.levels.INFO)
    return
  end
  local shown = M.suggestion()
  require('steerlsp.chat').run(name, client, shown and shown.text)
end

--- Change steerlsp's settings: merged into the current ones and sent to the running
--- servers (workspace/didChangeConfiguration).
function M.configure(settings)
  if not opts then
    return
  end
  opts.settings = vim.tbl_deep_extend('force', opts.settings, settings or {})
  local section = as_object(opts.settings)
  local compat = require('steerlsp.compat')
  for _, client in ipairs(vim.lsp.get_clients({ name = 'steerlsp' })) do
    client.settings = vim.tbl_deep_extend('force', client.settings or {}, { steerlsp = section })
    compat.notify(client, 'workspace/didChangeConfiguration', { settings = { steerlsp = section } })
    require('steerlsp.status').ask(client.id) -- a model change reloads it
  end
end

-- ---- wiring -----------------------------------------------------------------------------

local ACTIONS = {
  accept = { M.accept, 'Accept the suggestion' },
  accept_word = { M.accept_word, "Accept the suggestion's next word" },
  accept_line = { M.accept_line, "Accept the suggestion's current line" },
  next = { M.next, 'Next suggestion' },
  prev = { M.prev, 'Previous suggestion' },
  dismiss = { M.dismiss, 'Dismiss the suggestion' },
  trigger = { M.trigger, 'Ask steerlsp for suggestions' },
}

local mapped = {} -- bufnr -> the keys set there, removed when setup() runs again

local function set_keymaps(bufnr)
  for _, lhs in ipairs(mapped[bufnr] or {}) do
    pcall(vim.keymap.del, 'i', lhs, { buffer = bufnr })
  end
  mapped[bufnr] = {}
  for name, lhs in pairs(opts.keymaps or {}) do
    local action = ACTIONS[name]
    if action and lhs then
      vim.keymap.set('i', lhs, function()
        action[1]()
      end, { buffer = bufnr, silent = true, desc = 'steerlsp: ' .. action[2] })
      table.insert(mapped[bufnr], lhs)
    end
  end
end

local function on_attach(args)
  local client = vim.lsp.get_client_by_id(args.data.client_id)
  if not client or client.name ~= 'steerlsp' then
    return
  end
  require('steerlsp.status').attach(client)
  backend.attach(args.buf, client)
  set_keymaps(args.buf)
  if args.buf == vim.api.nvim_get_current_buf() then
    activate(args.buf)
  end
end

local function on_detach(args)
  local client = vim.lsp.get_client_by_id(args.data.client_id)
  if not client or client.name ~= 'steerlsp' then
    return
  end
  backend.detach(args.buf)
  mapped[args.buf] = nil
  local others = vim.tbl_filter(function(b)
    return b ~= args.buf
  end, vim.lsp.get_buffers_by_client_id(client.id))
  if #others == 0 then
    require('steerlsp.status').detach(client.id)
  end
end

--- When the model becomes ready: ask again at the cursor if it was refused meanwhile.
local function on_ready(client_id, kind, before)
  local bufnr, client = current()
  if not (enabled and client and client.id == client_id and backend) then
    return
  end
  if vim.api.nvim_get_mode().mode:sub(1, 1) ~= 'i' then
    return
  end
  if kind or before == 'loading' then
    backend.trigger(bufnr, kind or AUTOMATIC)
  end
end

local function highlights()
  vim.api.nvim_set_hl(0, 'SteerlspGhost', { link = 'Comment', default = true })
  vim.api.nvim_set_hl(0, 'SteerlspGhostHint', { link = 'NonText', default = true })
end

local function choose_backend()
  if opts.native ~= false and vim.fn.has('nvim-0.12') == 1 then
    local native = require('steerlsp.native')
    if native.available() then
      return native
    end
  end
  return require('steerlsp.ghost')
end

--- Buffers the steerlsp client is attached to now.
local function attached_buffers()
  local buffers = {}
  for _, client in ipairs(vim.lsp.get_clients({ name = 'steerlsp' })) do
    for _, bufnr in ipairs(vim.lsp.get_buffers_by_client_id(client.id)) do
      buffers[#buffers + 1] = { bufnr = bufnr, client = client }
    end
  end
  return buffers
end

--- Configure and start the plugin; may be called again to change options.
---@param user table|nil see :help steerlsp-options
function M.setup(user)
  if not supported() then
    return
  end
  local before = opts and vim.deepcopy(opts.settings)
  local previous = backend
  opts = require('steerlsp.config').merge(user)
  enabled = opts.enabled ~= false
  local status = require('steerlsp.status')
  status.interval_ms = opts.status_interval_ms
  status.on_ready = on_ready
  local ghost = require('steerlsp.ghost')
  ghost.debounce_ms = opts.debounce_ms
  ghost.allowed = function()
    return enabled
  end
  backend = choose_backend()
  highlights()

  -- Re-running setup: move the attached buffers to the new backend and keymaps.
  for _, seen in ipairs(attached_buffers()) do
    if previous and previous ~= backend then
      previous.detach(seen.bufnr)
    end
    backend.attach(seen.bufnr, seen.client)
    set_keymaps(seen.bufnr)
  end
  activate(vim.api.nvim_get_current_buf())

  local group = vim.api.nvim_create_augroup('steerlsp', { clear = true })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = opts.filetypes,
    callback = function(args)
      start(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd('LspAttach', { group = group, callback = on_attach })
  vim.api.nvim_create_autocmd('LspDetach', { group = group, callback = on_detach })
  vim.api.nvim_create_autocmd('BufEnter', {
    group = group,
    callback = function(args)
      activate(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd('BufLeave', {
    group = group,
    callback = function(args)
      deactivate(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(args)
      if args.data and args.data.client_id then
        status.progress(args.data.client_id, args.data.params)
      end
    end,
  })
  vim.api.nvim_create_autocmd('LspRequest', {
    group = group,
    callback = function(args)
      local request = args.data and args.data.request
      if request and request.method == 'textDocument/inlineCompletion' then
        pcall(vim.cmd, 'redrawstatus')
      end
    end,
  })
  vim.api.nvim_create_autocmd('ColorScheme', { group = group, callback = highlights })

  -- Python buffers opened before setup() (a lazy-loaded plugin).
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    local python = vim.tbl_contains(opts.filetypes, vim.bo[bufnr].filetype)
    if vim.api.nvim_buf_is_loaded(bufnr) and python then
      start(bufnr)
    end
  end
  if before and not vim.deep_equal(before, opts.settings) then
    M.configure({})
  end
end

--- The merged options (nil before setup()).
function M.options()
  return opts
end

return M
