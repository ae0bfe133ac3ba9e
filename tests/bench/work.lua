-- The Lua interpreter's workload for tests/bench/realprogs.py: the kinds
-- of work a Lua program does (calls and recursion, tables as arrays and as
-- hashes, strings built and matched, closures, sorting with a Lua
-- comparator), about half a second of the plain build's CPU. Prints one
-- line per part, the same in every run.
local N = tonumber(arg and arg[1]) or 1

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end

local function tables(n)
  local t, h = {}, {}
  for i = 1, n do t[i] = i * 3 % 1009; h["k" .. (i % 997)] = (h["k" .. (i % 997)] or 0) + t[i] end
  local s = 0
  for k, v in pairs(h) do s = s + v + #k end
  return s
end

local function strings(n)
  local parts = {}
  for i = 1, n do parts[#parts + 1] = string.format("%d:%x;", i, i * 7) end
  local text = table.concat(parts)
  local c = 0
  for a, b in text:gmatch("(%d+):(%x+);") do c = c + #a + #b end
  return c, #text:gsub("1", "one")
end

local function closures(n)
  local acc = {}
  for i = 1, n do acc[i] = function(x) return x + i end end
  local s = 0
  for r = 1, 20 do for i = 1, n do s = acc[i](s) % 1000003 end end
  return s
end

local function sorting(n)
  local t = {}
  for i = 1, n do t[i] = (i * 7919) % 10007 end
  table.sort(t, function(a, b) return a > b end)
  return t[1], t[n]
end

for round = 1, N do
  print("fib", fib(24))
  print("tables", tables(60000))
  print("strings", strings(30000))
  print("closures", closures(3000))
  print("sorting", sorting(40000))
end
