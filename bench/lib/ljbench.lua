-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- LuaJIT's own bench programs (its test suite's bench/ folder), with
-- arguments that make each run about a second here.
return {
  { "series", 5000 }, { "array3d", 200 }, { "md5", 10000 }, { "ray", 6 },
  { "partialsums", 1e7 }, { "binary-trees", 14 }, { "nbody", 1e6 },
  { "spectral-norm", 500 }, { "fannkuch", 10 }, { "mandelbrot", 1000 },
  { "nsieve", 8 }, { "fasta", 1e6 },
}
