-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- CPU: floating-point loops (Mandelbrot set).
local size = tonumber(arg and arg[1]) or 2000
local inside = 0
for y = 0, size - 1 do
  local ci = 2 * y / size - 1
  for x = 0, size - 1 do
    local cr, zr, zi, n = 2 * x / size - 1.5, 0, 0, 0
    while n < 50 and zr * zr + zi * zi < 4 do
      zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
      n = n + 1
    end
    if n == 50 then inside = inside + 1 end
  end
end
assert(inside > 0)
