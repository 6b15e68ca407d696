-- The batch scripts' loop: `f(i)` for i = 1..n, each reply in turn; returns the replies.
local function each(n, f)
  local result = {}
  for i = 1, n do
    result[i] = f(i)
  end
  return result
end

