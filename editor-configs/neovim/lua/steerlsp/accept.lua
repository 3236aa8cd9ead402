-- Accepting a suggestion, whole or in part: shared by the native and the extmark paths.
local compat = require('steerlsp.compat')

local M = {}

-- Identifier bytes: ASCII letters, digits, "_" and any byte of a multibyte character.
local WORD = '[%w_\128-\255]+'

--- The part of `text` (what the suggestion would insert at the cursor) that `how` accepts.
--- 'all': everything; 'line': up to the end of its first line (a leading line break
--- takes the next line with it); 'word': leading blanks and one word or one run of
--- punctuation (a leading line break takes the next line's indent with it).
---@param text string
---@param how 'all'|'word'|'line'
---@return string
function M.part(text, how)
  if how == 'all' then
    return text
  end
  if how == 'line' then
    local from = text:sub(1, 1) == '\n' and 2 or 1
    local nl = text:find('\n', from, true)
    return nl and text:sub(1, nl - 1) or text
  end
  return text:match('^\n[ \t]*')
    or text:match('^[ \t]*' .. WORD)
    or text:match('^[ \t]*[^%w_\128-\255%s]+')
    or text:match('^%s+')
    or text
end

--- Insert `text` at (row, col) (0-based, byte column) of the window's buffer and put the
--- cursor after it.
---@return integer row, integer col where the cursor now is
function M.insert(win, row, col, text)
  local bufnr = vim.api.nvim_win_get_buf(win)
  local lines = vim.split(text, '\n', { plain = true })
  vim.api.nvim_buf_set_text(bufnr, row, col, row, col, lines)
  local end_row = row + #lines - 1
  local end_col = (#lines == 1 and col or 0) + #lines[#lines]
  vim.api.nvim_win_set_cursor(win, { end_row + 1, end_col })
  return end_row, end_col
end

--- The text between (row, col) and the cursor, or nil when the cursor is before it.
---@return string|nil
function M.typed_since(win, row, col)
  local bufnr = vim.api.nvim_win_get_buf(win)
  local cursor = vim.api.nvim_win_get_cursor(win)
  local crow, ccol = cursor[1] - 1, cursor[2]
  if crow < row or (crow == row and ccol < col) then
    return nil
  end
  local ok, lines = pcall(vim.api.nvim_buf_get_text, bufnr, row, col, crow, ccol, {})
  return ok and table.concat(lines, '\n') or nil
end

--- Tell the server a suggestion was taken: the item's command (steerlsp counts
--- acceptances with `steerlsp.accepted`). Its reply is of no interest.
function M.run_command(client, command)
  if not (client and command and command.command) then
    return
  end
  compat.request(client, 'workspace/executeCommand', {
    command = command.command,
    arguments = command.arguments,
  }, function() end)
end

--- The text of an InlineCompletionItem's insertText (a string or a snippet StringValue).
---@return string
function M.insert_text(item)
  local text = item.insertText or item.insert_text
  if type(text) == 'table' then
    -- A snippet: placeholders are shown and inserted as their default text.
    text = (text.value or ''):gsub('%$%{%d+:?([^}]*)%}', '%1'):gsub('%$%d+', '')
  end
  return text or ''
end

return M
