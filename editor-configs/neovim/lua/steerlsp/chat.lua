-- The ChatLSP commands (:SteerExpectedType ...) and :SteerExplain, each answered in a
-- floating window. A server without the method (not in capabilities.experimental, or
-- MethodNotFound) gets one message saying so.
local compat = require('steerlsp.compat')

local M = {}

local METHOD_NOT_FOUND = -32601

---@param content table|string|nil MarkupContent or a string
local function text_of(content)
  if type(content) == 'table' then
    return content.value or ''
  end
  return type(content) == 'string' and content or ''
end

local function fenced(lines, text)
  lines[#lines + 1] = '```python'
  vim.list_extend(lines, vim.split(text, '\n', { plain = true }))
  lines[#lines + 1] = '```'
end

local function plain(lines, text)
  vim.list_extend(lines, vim.split(text, '\n', { plain = true }))
end

local function context_list(lines, result, nothing)
  local contents = result.contents or {}
  if #contents == 0 then
    lines[#lines + 1] = nothing
  end
  for _, content in ipairs(contents) do
    fenced(lines, text_of(content))
  end
end

local function explain(lines, result)
  if result.completion == nil or result.completion == vim.NIL then
    lines[#lines + 1] = 'No completion in this buffer yet.'
    return
  end
  fenced(lines, result.completion)
  lines[#lines + 1] = ('- steered: %s'):format(result.steered and 'yes' or 'no')
  lines[#lines + 1] = ('- prompt tokens: %s'):format(result.prompt_tokens or '?')
  local context = result.context or {}
  local parts = #context > 0 and table.concat(context, ', ') or 'none'
  lines[#lines + 1] = ('- ChatLSP context: %s'):format(parts)
  lines[#lines + 1] = ('- error rounds: %s'):format(result.rounds or 0)
  local trace = result.trace
  if type(trace) ~= 'table' then
    return
  end
  lines[#lines + 1] = ''
  lines[#lines + 1] = ('%d trigger points, %d questions to pylsp, %s ms waiting'):format(
    #(trace.triggers or {}),
    #(trace.queries or {}),
    trace.waited_ms and ('%.0f'):format(trace.waited_ms) or '?'
  )
  for _, walk in ipairs(trace.walks or {}) do
    local followed = type(walk.followed) == 'table' and table.concat(walk.followed, ', ') or 'all'
    lines[#lines + 1] =
      ('- walk (%s, %s candidates): %s'):format(walk.mode, walk.candidates, followed)
  end
  for _, hint in ipairs(trace.hints or {}) do
    lines[#lines + 1] = ('- %s hint: %s'):format(hint.kind, hint.text)
  end
  for _, change in ipairs(trace.changed or {}) do
    lines[#lines + 1] =
      ('- token changed: `%s` -> `%s`'):format(tostring(change.before), tostring(change.after))
  end
  for _, note in ipairs(trace.notes or {}) do
    lines[#lines + 1] = '- ' .. note
  end
end

local function error_report(lines, result)
  lines[#lines + 1] = result.needsRepair and 'Needs repair.' or 'No errors that need repair.'
  for _, d in ipairs(result.diagnostics or {}) do
    local start = d.range and d.range.start or { line = 0, character = 0 }
    lines[#lines + 1] = ('- %d:%d %s'):format(start.line + 1, start.character + 1, d.message or '')
  end
  local feedback = text_of(result.content)
  if feedback ~= '' then
    lines[#lines + 1] = ''
    plain(lines, feedback)
  end
end

M.commands = {
  SteerExpectedType = {
    method = 'textDocument/expectedType',
    title = 'Expected type',
    render = function(lines, result)
      fenced(lines, text_of(result.content))
    end,
  },
  SteerRelevantTypes = {
    method = 'textDocument/relevantTypes',
    title = 'Relevant types',
    render = function(lines, result)
      context_list(lines, result, 'No types are reachable from the expected type.')
    end,
  },
  SteerRelevantHeaders = {
    method = 'textDocument/relevantHeaders',
    title = 'Relevant headers',
    render = function(lines, result)
      context_list(lines, result, 'No function in scope returns the expected type.')
    end,
  },
  SteerErrorReport = {
    method = 'textDocument/errorReport',
    title = 'Error report',
    render = error_report,
  },
  SteerTutorial = {
    method = 'textDocument/aiTutorial',
    title = 'Project tutorial',
    render = function(lines, result)
      plain(lines, text_of(result.content))
    end,
  },
  SteerExplain = {
    method = 'steerlsp/explain',
    title = 'What steered the last completion',
    render = explain,
  },
}

--- Whether the server lists `method` in its experimental capabilities.
function M.advertised(client, method)
  local experimental = client.server_capabilities and client.server_capabilities.experimental
  if type(experimental) ~= 'table' then
    return false
  end
  local section = method:match('^steerlsp/') and experimental.steerlsp or experimental.chatlsp
  return type(section) == 'table' and vim.tbl_contains(section.methods or {}, method)
end

local function unavailable(method)
  vim.notify(
    ('steerlsp: %s is not available from this server (it does not serve ChatLSP)'):format(method),
    vim.log.levels.WARN
  )
end

--- Open the floating window with `lines` (markdown).
---@return integer bufnr, integer winid
function M.show(lines)
  return vim.lsp.util.open_floating_preview(lines, 'markdown', {
    border = 'rounded',
    focus_id = 'steerlsp',
    max_width = math.max(40, math.floor(vim.o.columns * 0.8)),
    max_height = math.max(10, math.floor(vim.o.lines * 0.6)),
  })
end

--- Run the command `name` (a key of M.commands) for the cursor of the current window.
---@param name string
---@param client table the steerlsp client of the current buffer
---@param completion string|nil errorReport: the text checked as if inserted at the cursor
function M.run(name, client, completion)
  local command = M.commands[name]
  if not M.advertised(client, command.method) then
    unavailable(command.method)
    return
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local params
  if command.method == 'steerlsp/explain' then
    params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  else
    params = vim.lsp.util.make_position_params(0, client.offset_encoding)
    params.completion = command.method == 'textDocument/errorReport' and completion or nil
  end
  compat.request(client, command.method, params, function(err, result)
    if err then
      if err.code == METHOD_NOT_FOUND then
        unavailable(command.method)
      else
        local message = ('steerlsp: %s: %s'):format(command.title, err.message or tostring(err))
        vim.notify(message, vim.log.levels.WARN)
      end
      return
    end
    local lines = { '# ' .. command.title, '' }
    command.render(lines, result or {})
    M.show(lines)
  end, bufnr)
end

return M
