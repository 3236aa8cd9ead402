-- What differs between Neovim 0.10, 0.11 and 0.12, in one place.
local M = {}

-- 0.11 made the client's functions methods (client:request); 0.10 has only client.request.
local methods = vim.fn.has('nvim-0.11') == 1

---@return boolean, integer|nil
function M.request(client, method, params, handler, bufnr)
  if methods then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.notify(client, method, params)
  if methods then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

function M.cancel(client, id)
  if methods then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

function M.request_sync(client, method, params, timeout_ms, bufnr)
  if methods then
    return client:request_sync(method, params, timeout_ms, bufnr)
  end
  return client.request_sync(method, params, timeout_ms, bufnr)
end

--- The byte column of an LSP `character` on `line` (in the client's position encoding).
---@param line string
---@param character integer
---@param encoding string 'utf-8', 'utf-16' or 'utf-32'
---@return integer
function M.byte_col(line, character, encoding)
  if encoding == 'utf-8' then
    return math.min(character, #line)
  end
  local ok, col
  if methods then
    ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  else
    ok, col = pcall(vim.str_byteindex, line, character, encoding == 'utf-16')
  end
  return ok and col or #line
end

M.uv = vim.uv or vim.loop

return M
