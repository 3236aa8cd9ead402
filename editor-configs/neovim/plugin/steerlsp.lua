-- Commands only: nothing starts until require('steerlsp').setup() is called.
if vim.g.loaded_steerlsp then
  return
end
vim.g.loaded_steerlsp = true

local COMMANDS = {
  'SteerExpectedType',
  'SteerRelevantTypes',
  'SteerRelevantHeaders',
  'SteerErrorReport',
  'SteerTutorial',
  'SteerExplain',
}

if vim.fn.has('nvim-0.10') == 0 then
  -- Only what Neovim 0.5 already has: each command says which version is needed.
  for _, name in ipairs(vim.list_extend({ 'Steer' }, COMMANDS)) do
    vim.cmd(('command! -nargs=* %s lua require("steerlsp").setup()'):format(name))
  end
  return
end

local subcommands = {
  toggle = function()
    require('steerlsp').toggle()
  end,
  enable = function()
    require('steerlsp').enable()
  end,
  disable = function()
    require('steerlsp').disable()
  end,
  status = function()
    require('steerlsp').show_status()
  end,
}

vim.api.nvim_create_user_command('Steer', function(args)
  local run = subcommands[args.args ~= '' and args.args or 'status']
  if not run then
    vim.notify('steerlsp: :Steer toggle|enable|disable|status', vim.log.levels.WARN)
    return
  end
  run()
end, {
  nargs = '?',
  desc = 'steerlsp: toggle, enable, disable, status',
  complete = function(lead)
    local names = vim.tbl_filter(function(name)
      return name:find(lead, 1, true) == 1
    end, vim.tbl_keys(subcommands))
    table.sort(names)
    return names
  end,
})

for _, name in ipairs(COMMANDS) do
  vim.api.nvim_create_user_command(name, function()
    require('steerlsp').chat(name)
  end, { desc = 'steerlsp: ChatLSP ' .. name:sub(6) .. ' at the cursor, in a floating window' })
end
